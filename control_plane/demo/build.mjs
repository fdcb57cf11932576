// Builds static/build/: the demo page's script and style sheet (InstantSearch.js and the shopsearch
// client bundled in: the page loads no code from elsewhere), and the client's browser file that the
// API serves to shop pages at /js/shopsearch.js. `npm run build` (./dev does it when sources change).
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "static", "build");
const client = join(here, "..", "..", "clients", "js", "src", "index.ts");

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const common = { bundle: true, minify: true, sourcemap: true, target: "es2019", legalComments: "linked" };
await esbuild.build({ ...common, entryPoints: [join(here, "src", "demo.js")], format: "iife", outfile: join(out, "demo.js"),
  define: { "process.env.NODE_ENV": '"production"', __DEV__: "false" } });
await esbuild.build({ ...common, entryPoints: [join(here, "src", "demo.css")], outfile: join(out, "demo.css"), loader: { ".svg": "dataurl" } });
await esbuild.build({ ...common, entryPoints: [client], format: "iife", globalName: "__shopsearch", outfile: join(out, "shopsearch.js"),
  footer: { js: "window.shopsearch=Object.assign(__shopsearch.shopsearch,__shopsearch);" } });
await esbuild.build({ ...common, entryPoints: [client], format: "esm", outfile: join(out, "shopsearch.mjs") });
