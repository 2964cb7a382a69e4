import { SqlInboxError } from "./errors.js";

/**
 * The longest identifier every engine accepts: Postgres truncates past 63 bytes,
 * MySQL and MariaDB refuse past 64.
 */
export const MAX_IDENTIFIER_LENGTH = 63;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Refuses a table or column name that cannot be an identifier on every engine.
 * Names are quoted when emitted; this check keeps a typo (a dot, a quote, a space)
 * from becoming a different table at run time.
 *
 * @example validateIdentifier("report_jobs", "table") // returns "report_jobs"
 * @example validateIdentifier("public.jobs", "table") // throws: a dot is not allowed
 */
export function validateIdentifier(name: unknown, what: string): string {
  if (typeof name !== "string") {
    throw new SqlInboxError("Identifier", `${what} name must be a string, got ${typeof name}`);
  }
  if (name.length === 0) {
    throw new SqlInboxError("Identifier", `${what} name is empty`);
  }
  if (name.length > MAX_IDENTIFIER_LENGTH) {
    throw new SqlInboxError("Identifier", `${what} name "${name}" is ${name.length} characters long; at most ${MAX_IDENTIFIER_LENGTH} fit every engine`);
  }
  if (!IDENTIFIER.test(name)) {
    const bad = [...name].find((ch) => !/[A-Za-z0-9_]/.test(ch));
    const why =
      bad === "."
        ? "a dot is not allowed (name the table without a schema)"
        : bad === '"' || bad === "'" || bad === "`"
          ? `a quote (${bad}) is not allowed`
          : bad !== undefined
            ? `the character ${JSON.stringify(bad)} is not allowed`
            : "it must not start with a digit";
    throw new SqlInboxError("Identifier", `${what} name ${JSON.stringify(name)} cannot be an identifier: ${why}; use letters, digits and underscores`);
  }
  return name;
}
