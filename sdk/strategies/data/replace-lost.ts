import type { FitContext } from "../../driver/fit-context";

/**
 * `.spares(n)` or `elastic: { replace: true }`: the fit's context with each lost worker replaced
 * once the loop has heard of the loss, by an idle spare or else (`orNew`) a new worker. The
 * replacement comes as cluster.add()'s does, through the loop's admit handler, at the next step
 * boundary. One that cannot start, or no spare left, is said on the driver's output, and the fit
 * goes on with the workers it has.
 */
export function replacingLost(ctx: FitContext, orNew: boolean): FitContext {
  return {
    ...ctx,
    survive: (handler) =>
      ctx.survive((lost, err) => {
        handler(lost, err);
        const said = (why: string): void =>
          void process.stderr.write(`meshtrain: rank ${lost.rank} was lost and ${why}\n`);
        ctx.replace(orNew).then(
          (rank) => rank === null && said("no spare is left to take its place; the fit goes on with fewer workers"),
          (e: unknown) =>
            said(`its replacement did not start: ${(e as { summary?: string }).summary ?? (e as Error).message}`),
        );
      }),
  };
}
