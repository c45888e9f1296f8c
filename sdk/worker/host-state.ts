import { ProtocolError, StateError } from "../errors/errors";
import type { MessageOf } from "../protocol/messages";
import type { Tensorlike } from "../protocol/tensor";
import type { Draft } from "../transport/channel";
import type { WorkerRole } from "../roles/role";

/** A worker's answer to "fetchState": its role's optimizer state (a sharded replica's laid flat over its ranges), or only the ranges it holds state for. */
export async function stateOf(
  role: WorkerRole,
  msg: MessageOf<"fetchState">,
): Promise<{ draft: Draft; tensors: Tensorlike[] }> {
  if (msg.only === "ranges") {
    if (!role.stateRanges)
      throw new StateError("this worker's role holds no optimizer state of ranges of the flat parameters");
    const ranges = await role.stateRanges();
    return { draft: { type: "state", re: msg.id, format: "native", names: [], scalars: {}, ranges }, tensors: [] };
  }
  const state = await role.exportState();
  return {
    draft: {
      type: "state",
      re: msg.id,
      format: state.format,
      names: state.tensors.map((t) => t.name),
      scalars: state.scalars,
      ...(state.ranges ? { ranges: state.ranges } : {}),
    },
    tensors: state.tensors.map((t) => ({ data: t.data, shape: t.shape })),
  };
}

/** Hands the role the optimizer state a "setState" carries, checked against the names it announces. */
export function setStateOf(role: WorkerRole, msg: MessageOf<"setState">, attachments: Tensorlike[]): Promise<void> {
  return role.importState({
    format: msg.format,
    tensors: stateTensors(msg, attachments),
    scalars: msg.scalars,
    ...(msg.ranges ? { ranges: msg.ranges } : {}),
  });
}

function stateTensors(
  msg: MessageOf<"setState">,
  attachments: Tensorlike[],
): Array<{ name: string; data: Float32Array; shape: number[] }> {
  if (attachments.length !== msg.names.length)
    throw new ProtocolError(`"setState" names ${msg.names.length} tensors and carries ${attachments.length}`);
  return attachments.map((a, i) => {
    if (!(a.data instanceof Float32Array))
      throw new ProtocolError(`optimizer state tensor ${msg.names[i]} is not float32`);
    return { name: msg.names[i]!, data: a.data, shape: [...a.shape] };
  });
}
