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

/**
 * The first error among `Checks`, or `unknown` when none fails. Two different errors
 * intersected would reduce to `never` (their messages are disjoint literals), and the
 * compiler would then say "not assignable to never" instead of either sentence.
 */
export type FirstError<Checks extends readonly unknown[]> = Checks extends readonly [infer Head, ...infer Tail]
  ? Head extends SpecError<string>
    ? Head
    : FirstError<Tail>
  : unknown;
