// Compiles every tool's inputSchema and outputSchema (a tools/list result on stdin) with Ajv in strict mode,
// as strict validators in clients do; prints one JSON array of the problems found (empty when there are none).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const Ajv = require("ajv");
const addFormats = require("ajv-formats");

const tools = JSON.parse(readFileSync(0, "utf8")).tools;
const problems = [];
for (const tool of tools) {
  for (const part of ["inputSchema", "outputSchema"]) {
    if (tool[part] === undefined) continue;
    const report = (level) => (message) => problems.push({ tool: tool.name, part, level, message: String(message) });
    const ajv = new Ajv({ strict: true, allErrors: true, logger: { log() {}, warn: report("warn"), error: report("error") } });
    addFormats(ajv);
    try {
      ajv.compile(tool[part]);
    } catch (error) {
      report("refused")(error.message);
    }
  }
}
process.stdout.write(JSON.stringify(problems) + "\n");
