export interface ErrorDetail {
  path?: string;
  message: string;
  [key: string]: unknown;
}

export interface ShopsearchErrorInit {
  status: number;
  code: string;
  message: string;
  details?: ErrorDetail[];
  retryAfter?: number | null;
  cause?: unknown;
}

/**
 * Every failure of a call: the service's error answer (`status`, `error.code`, `message`, `details`,
 * and `Retry-After` in seconds), or, with `status` 0, no answer at all (`NETWORK_ERROR`, `TIMEOUT`)
 * or one that is not the service's JSON (`BAD_ANSWER`).
 */
export class ShopsearchError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: ErrorDetail[];
  readonly retryAfter: number | null;

  constructor(init: ShopsearchErrorInit) {
    super(init.message);
    this.name = "ShopsearchError";
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? [];
    this.retryAfter = init.retryAfter ?? null;
    if (init.cause !== undefined) (this as { cause?: unknown }).cause = init.cause;
  }
}
