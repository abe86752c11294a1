/** A node a demo server runs on: its name (the server's host name) and its internal address. */
export interface ServerHost {
  node: string;
  address: string;
}
