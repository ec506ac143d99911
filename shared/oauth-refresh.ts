export interface OAuthRefreshResult {
  refreshed: number;
}

/**
 * Refreshes OAuth connections whose access tokens expire soon. No feature stores OAuth
 * connections yet (integrations come later), so there is nothing to refresh.
 */
export async function refreshExpiringConnections(): Promise<OAuthRefreshResult> {
  return { refreshed: 0 };
}
