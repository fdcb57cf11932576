/**
 * An insights client for InstantSearch's `insights` middleware (the interface of Algolia's
 * `search-insights`): clicks and conversions on hits of a search go to `POST /v1/events` with the
 * answer's `queryId`. Pass it as `insights: { insightsClient: client.insightsClient }`, so that
 * InstantSearch never loads Algolia's script.
 *
 * Events shopsearch does not record (views, and clicks or conversions not tied to a search) are
 * dropped, as are InstantSearch's own usage reports.
 */

import type { SearchEvent } from "./types";

type Callback = (error: unknown, value?: unknown) => void;

export interface InsightsClient {
  (method: string, payload?: unknown, ...rest: unknown[]): void;
  /** Failures of sending (the shopper's page carries on; the error goes here). */
  onError?: (error: unknown) => void;
}

interface AfterSearch {
  queryID?: string;
  objectIDs?: string[];
  positions?: number[];
  userToken?: string | number;
}

const KINDS: Record<string, SearchEvent["type"]> = {
  clickedObjectIDsAfterSearch: "click",
  convertedObjectIDsAfterSearch: "conversion",
};

export function createInsightsClient(send: (events: SearchEvent[]) => Promise<unknown>): InsightsClient {
  let userToken: string | undefined;
  let listener: ((token: string | undefined) => void) | undefined;

  const client: InsightsClient = (method, payload, ...rest) => {
    switch (method) {
      case "setUserToken":
        userToken = payload === undefined || payload === null ? undefined : String(payload);
        listener?.(userToken);
        return;
      case "getUserToken": {
        const callback = rest[0] as Callback | undefined;
        callback?.(null, userToken);
        return;
      }
      case "onUserTokenChange": {
        listener = payload as typeof listener;
        const immediate = (rest[0] as { immediate?: boolean } | undefined)?.immediate;
        if (listener && immediate) listener(userToken);
        return;
      }
      default: {
        const type = KINDS[method];
        const event = payload as AfterSearch | undefined;
        if (!type || !event?.queryID || !event.objectIDs?.length) return;
        const token = event.userToken !== undefined ? String(event.userToken) : userToken;
        const events: SearchEvent[] = event.objectIDs.map((id, i) => ({
          type,
          queryId: event.queryID!,
          documentId: String(id),
          ...(event.positions?.[i] ? { position: event.positions[i] } : {}),
          ...(token ? { userToken: token.slice(0, 200) } : {}),
        }));
        send(events).catch((error) => client.onError?.(error));
      }
    }
  };
  return client;
}
