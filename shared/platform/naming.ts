/**
 * Wire names for the spec's neutral words (see NAMING.md in the spec bundle). Every
 * brand-bearing string on the wire is built from here, so a rename is one edit.
 */
export const wire = {
  /** The compatible voice-agent API ("compat" in the spec). */
  compat: 'retell',
  /** The operator's own name ("service" in the spec). */
  service: 'parley',
  carrierA: 'twilio',
  carrierB: 'telnyx',
} as const;

export const signatureHeaders = [`x-${wire.service}-signature`, `x-${wire.compat}-signature`] as const;

/** A webhook's event ID (its delivery ID), the same on every attempt at delivering it. */
export const eventIdHeader = `x-${wire.service}-event-id`;
