/**
 * `;transport=` of a SIP URI (a transfer destination such as
 * `sip:desk@pbx.example.com;transport=tcp`): udp, tcp or tls, in any case. Answers why the
 * URI's transport is not acceptable, or undefined when it is absent or one of those.
 */
export function sipTransportProblem(uri: string): string | undefined {
  const transport = /;transport=([^;?\s]*)/i.exec(uri)?.[1];
  if (transport === undefined || /^(udp|tcp|tls)$/i.test(transport)) return undefined;
  return `transport must be udp, tcp or tls (got ${transport.slice(0, 32) || 'nothing'})`;
}
