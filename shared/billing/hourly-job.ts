export interface HourlyBillingResult {
  workspaces: number;
}

/**
 * The hourly billing run. Usage metering and billing come later, so there is nothing to
 * bill yet.
 */
export async function runHourlyBilling(): Promise<HourlyBillingResult> {
  return { workspaces: 0 };
}
