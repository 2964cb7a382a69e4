/**
 * The AsyncAPI 3 channel bindings of a JetStream route, for the route's `bindings` in `asyncApiDocument` of
 * `@sqlinbox/cli`. The NATS channel binding has no fields (the binding specification reserves the name: a NATS
 * channel is its subject, the channel's address; a queue group belongs to the operation binding). The object
 * says the channel is reached over NATS.
 */
export function natsChannelBindings(): { readonly nats: Record<string, never> } {
  return { nats: {} };
}
