/**
 * A compile-time error that reads as a sentence. Where a description breaks a rule,
 * a parameter's type becomes `SpecError<"…what to do…">`, so the compiler says:
 * `Argument of type … is not assignable to parameter of type SpecError<"lease and an advisory key exclude each other: …">`.
 */
export interface SpecError<Message extends string> {
  readonly "sqlinbox error": Message;
}

/** `unknown` when `Check` is `true`, otherwise the error: intersected with a parameter type. */
export type Require<Check extends boolean, Message extends string> = Check extends true ? unknown : SpecError<Message>;
