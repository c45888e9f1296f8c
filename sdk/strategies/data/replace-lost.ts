import type { FitContext } from "../../driver/fit-context";

/**
 * `elastic: { replace: true }`: the fit's context with each lost worker replaced once the loop
 * has heard of the loss. The replacement comes as cluster.add()'s does, through the loop's
 * admit handler, at the next step boundary. A replacement that cannot start is said on the
 * driver's output, and the fit goes on with the workers it has, as without replace.
 */
export function replacingLost(ctx: FitContext): FitContext {
  return {
    ...ctx,
    survive: (handler) =>
      ctx.survive((lost, err) => {
        handler(lost, err);
        ctx.replace().catch((e: unknown) => {
          const why = (e as { summary?: string; message?: string }).summary ?? (e as Error).message;
          process.stderr.write(`meshtrain: rank ${lost.rank} was lost and its replacement did not start: ${why}\n`);
        });
      }),
  };
}
