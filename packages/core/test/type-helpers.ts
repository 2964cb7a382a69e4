import type { InboxDefinition } from "../src/internal.js";

/**
 * The sentence of the `SpecError` a parameter type carries, `"no error"` when it carries none,
 * `never` when two errors collapsed into `never`. Lets a type test prove *which* rule failed,
 * where `// @ts-expect-error` only proves that something did.
 */
export type ErrorMessage<P> = [P] extends [never] ? never : [P] extends [{ readonly "sqlinbox error": infer M }] ? M : "no error";

/** Infers a definition exactly as `defineInbox` does (`const D extends InboxDefinition`), without checking it. */
export const definition = <const D extends InboxDefinition>(d: D): D => d;
