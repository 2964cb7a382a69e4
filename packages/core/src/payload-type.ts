/**
 * A Standard Schema (zod, valibot, arktype, …), read structurally so core depends on none of them.
 * See https://standardschema.dev.
 */
export interface StandardSchemaLike<Output = unknown> {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly types?: { readonly input: unknown; readonly output: Output } | undefined;
  };
}
export type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined }> };

/** Names a payload's type without checking it at run time: `payloadOf<Report>()`. */
export interface PayloadTypeMarker<T> {
  readonly "~sqlinboxPayload": T | undefined;
}

/** How a payload's type is given: a bare marker, or a Standard Schema that also validates. */
export type PayloadType<T> = PayloadTypeMarker<T> | StandardSchemaLike<T>;

/** The decoded type a payload type gives handlers. */
export type PayloadTypeOf<P> = P extends PayloadTypeMarker<infer T> ? T : P extends StandardSchemaLike<infer T> ? T : unknown;

/**
 * Names the payload's type for handlers and publishes, with no check at run time.
 * Give a Standard Schema instead to have each payload validated when it is decoded.
 */
export function payloadOf<T>(): PayloadTypeMarker<T> {
  return Object.freeze({ "~sqlinboxPayload": undefined });
}

export function isStandardSchema(value: unknown): value is StandardSchemaLike {
  return typeof value === "object" && value !== null && "~standard" in value;
}

/** Names a result or progress column's type (no check at run time): `resultOf<Report>()`, `progressOf<number>()`. */
export interface ValueTypeMarker<T> {
  readonly "~sqlinboxValue": T | undefined;
}

/** Names the type a result column holds: `.result(column("result"), resultOf<ReportLink>())`. */
export function resultOf<T>(): ValueTypeMarker<T> {
  return Object.freeze({ "~sqlinboxValue": undefined });
}

/** Names the type a progress column holds: `.progress(column("progress"), progressOf<{ done: number }>())`. */
export function progressOf<T>(): ValueTypeMarker<T> {
  return Object.freeze({ "~sqlinboxValue": undefined });
}
