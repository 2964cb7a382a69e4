/**
 * The AsyncAPI 3 channel bindings of an MQTT route, for the route's `bindings` in `asyncApiDocument` of
 * `@sqlinbox/cli`. The MQTT channel binding has no fields (the binding specification reserves the name: an
 * MQTT channel is its topic, the channel's address); the QoS and the rest belong to operation and message
 * bindings. The object says the channel is reached over MQTT.
 */
export function mqttChannelBindings(): { readonly mqtt: Record<string, never> } {
  return { mqtt: {} };
}
