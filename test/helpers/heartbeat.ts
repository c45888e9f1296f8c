/**
 * The heartbeat for tests that kill, freeze or cut off a member. Six seconds, not one: on a
 * machine whose host is swamped, every process here (driver included) stood still for more
 * than a second at a time, and a one-second timeout named a healthy member lost. Three did not
 * do either: a driver that scored 2000 MNIST digits on the "cpu" backend between two tests held
 * its thread for 3.4 s, and a worker waiting for the next fit left.
 */
export const TEST_HEARTBEAT = { intervalMs: 250, timeoutMs: 6000 } as const;
