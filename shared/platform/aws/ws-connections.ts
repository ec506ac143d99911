import type { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import { config } from '../config.ts';
import { awsClientOptions } from './client-options.ts';
import { tagAwsClient } from './unavailable.ts';

/*
 * Sending to WebSocket connections the server holds open: in AWS, API Gateway's WebSocket
 * API holds them and its management API (`@connections`, LIVE_WS_MANAGEMENT_URL) posts to
 * and closes them; locally the local server holds them (the `ws` package) and installs its
 * stand-in with `setLocalConnections`, the way the local queues are installed.
 */

export interface ConnectionPoster {
  /** Sends one text message; answers false when the connection is gone (it should be forgotten). */
  post(connectionId: string, data: string): Promise<boolean>;
  /** Closes the connection (a connection already gone is fine). */
  close(connectionId: string): Promise<void>;
}

let local: ConnectionPoster | undefined;
/** The management endpoint when the settings do not name one (the WebSocket API's own function reads it from each event). */
let endpointFromEvent: string | undefined;

export function useManagementEndpoint(url: string): void {
  endpointFromEvent ??= url;
}
let remote: Promise<ConnectionPoster> | undefined;

/** The local runtime's connections (never bundled: installed from local/). */
export function setLocalConnections(poster: ConnectionPoster | undefined): void {
  local = poster;
}

/** Where this process sends to connections, or undefined when it has nowhere (no WebSocket API configured, no local server). */
export async function connectionPoster(): Promise<ConnectionPoster | undefined> {
  const endpoint = config.LIVE_WS_MANAGEMENT_URL ?? endpointFromEvent;
  if (endpoint) return (remote ??= managementApi(endpoint));
  return local;
}

async function managementApi(endpoint: string): Promise<ConnectionPoster> {
  const { ApiGatewayManagementApiClient, PostToConnectionCommand, DeleteConnectionCommand, GoneException } = await import(
    '@aws-sdk/client-apigatewaymanagementapi'
  );
  const client: ApiGatewayManagementApiClient = tagAwsClient(
    new ApiGatewayManagementApiClient({ region: config.AWS_REGION, endpoint, ...awsClientOptions() }),
    'API Gateway',
  );
  return {
    async post(connectionId, data) {
      try {
        await client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: new TextEncoder().encode(data) }));
        return true;
      } catch (error) {
        if (error instanceof GoneException) return false;
        throw error;
      }
    },
    async close(connectionId) {
      try {
        await client.send(new DeleteConnectionCommand({ ConnectionId: connectionId }));
      } catch (error) {
        if (!(error instanceof GoneException)) throw error;
      }
    },
  };
}
