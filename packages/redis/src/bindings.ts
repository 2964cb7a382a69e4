/**
 * The AsyncAPI 3 channel bindings of a Redis stream route, for the route's `bindings` in `asyncApiDocument` of
 * `@sqlinbox/cli`. The Redis channel binding has no fields (the binding specification reserves the name: the
 * channel is the stream's key, the channel's address). The object says the channel is reached over Redis.
 */
export function redisChannelBindings(): { readonly redis: Record<string, never> } {
  return { redis: {} };
}
