/**
 * @sqlinbox/cli — the `sqlinbox` bin. Its parts are exported for programs that want the same
 * facts without a child process.
 */
export { ExitCode, CliError, type ExitCodeValue } from "./exit-codes.js";
export { openDatabase, redactUrl, type OpenedDatabase, type OperatorDb } from "./connect.js";
export { resolveTables, oneTable, type QueueTable, type TableSelection } from "./queue-tables.js";
export { inferDescription, ROLE_CONVENTIONS, CREATED_AT_NAMES } from "./infer-table.js";
export { OperatorConsole } from "./operator-console.js";
export type { StatusCounting } from "./inspect/capped.js";
export { sqlinboxProgram } from "./program.js";
export type { DeclaredLimits } from "./load-module.js";
export { asyncApiDocument, payloadSchemaOf, type AsyncApiInfo, type AsyncApiResult, type AsyncApiRoute, type JsonSchema, type PayloadSchemaSource } from "./asyncapi.js";
