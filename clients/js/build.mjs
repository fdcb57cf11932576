// Builds dist/: shopsearch.mjs (ES module), shopsearch.js (one browser file: `window.shopsearch`),
// and the TypeScript declarations. `node build.mjs [outdir]` also copies the browser files there.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
const common = { entryPoints: [join(here, "src/index.ts")], bundle: true, target: "es2019", sourcemap: true, legalComments: "none" };

rmSync(dist, { recursive: true, force: true });
await esbuild.build({ ...common, format: "esm", outfile: join(dist, "shopsearch.mjs") });
// the browser file: `shopsearch(...)` is the factory; `shopsearch.ShopsearchError` and the rest hang off it
await esbuild.build({
  ...common,
  format: "iife",
  globalName: "__shopsearch",
  minify: true,
  outfile: join(dist, "shopsearch.js"),
  footer: { js: "window.shopsearch=Object.assign(__shopsearch.shopsearch,__shopsearch);" },
});
execFileSync(process.execPath, [join(here, "node_modules/typescript/bin/tsc"), "-p", join(here, "tsconfig.json")], { stdio: "inherit" });

const copyTo = process.argv[2];
if (copyTo) {
  mkdirSync(copyTo, { recursive: true });
  for (const name of ["shopsearch.js", "shopsearch.js.map", "shopsearch.mjs", "shopsearch.mjs.map"]) copyFileSync(join(dist, name), join(copyTo, name));
}
