import { DataError } from "../errors/errors";
import type { Dataset } from "./dataset";
import type { MnistOptions } from "./mnist";

export type { MnistOptions } from "./mnist";

/** mnist.ts for a browser tab: the digits are files on the driver's disk, which a tab cannot read. */
export function mnist(_options: MnistOptions = {}): Dataset {
  throw new DataError("a browser tab cannot read the MNIST files: they are on the driver's machine", {
    hint: 'use feed: "driver" (the default) with tabs: the driver sends each step\'s samples',
  });
}
