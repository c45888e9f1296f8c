import { z } from "zod";
import { PROTOCOL_VERSION } from "./version";

/** Fields every message schema shares: the protocol version, and a request's id (a reply's re). */
export const v = z.literal(PROTOCOL_VERSION);
export const id = z
  .number()
  .int()
  .nonnegative()
  .max(2 ** 32 - 1);
