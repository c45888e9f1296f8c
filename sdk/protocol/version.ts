/** Bumped whenever a message or frame changes shape; peers with another version are refused. */
export const PROTOCOL_VERSION = 4;
