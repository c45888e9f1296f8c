import { z } from "zod";
import { MessageSchema, type MessageType } from "./messages";

/** The object schemas a message schema accepts (a union's each: LoadSchema is one per role). */
function objectsOf(schema: z.ZodType): Array<z.ZodObject> {
  if (schema instanceof z.ZodObject) return [schema];
  if (schema instanceof z.ZodUnion) return (schema.options as z.ZodType[]).flatMap(objectsOf);
  throw new Error("a message schema is an object or a union of objects");
}

/** Message types whose schema announces tensors that follow as binary frames (`attachments`), read off the schemas. */
export const CARRIES_TENSORS: ReadonlySet<MessageType> = new Set(
  objectsOf(MessageSchema)
    .filter((o) => "attachments" in o.shape)
    .map((o) => (o.shape.type as z.ZodLiteral<MessageType>).value),
);

/**
 * Who on a worker serves each message a driver sends: its communication thread ("comm"), or its
 * compute thread, to which the communication thread forwards it once the session has joined
 * ("compute"; "join" is read by both). Any other type from a driver is refused.
 */
export const WORKER_SERVES: Readonly<Partial<Record<MessageType, "comm" | "compute">>> = {
  configure: "comm",
  shutdown: "comm",
  join: "compute",
  load: "compute",
  step: "compute",
  applied: "compute",
  regroup: "compute",
  fetchState: "compute",
  setState: "compute",
  setShard: "compute",
  rewind: "compute",
  fetchWeights: "compute",
  digest: "compute",
  probe: "compute",
  ringProbe: "compute",
  profile: "compute",
  evaluate: "compute",
  release: "compute",
};
