import { ConfigError } from "../errors/errors";
import { FitAborted } from "./fit-stop";

/**
 * Gradient accumulation is done by replicas that compute their share in chunks (data-parallel
 * replicas and parameter-server workers); fits without them refuse it before anything is sent,
 * naming what to use.
 */
export function refuseAccumulation(o: { accumulate: number }, where: string, hint: string): void {
  if (o.accumulate > 1)
    throw new FitAborted(
      new ConfigError(
        `accumulate ${o.accumulate}: gradient accumulation is done by replicas computing their share in chunks; ${where} has none`,
        { hint },
      ),
    );
}
