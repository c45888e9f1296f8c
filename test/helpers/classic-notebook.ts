import type { Browser, Page } from "playwright-core";
import type { NotebookServer } from "./notebook-server";

/** What one output of a cell shows, as the classic notebook rendered it. */
export interface ShownOutput {
  /** The output area's classes, e.g. "output_subarea output_svg" or "... output_stream output_stdout". */
  kind: string;
  text: string;
  svgs: number;
}

/** A notebook ipynb of code cells on meshtrain's kernel, as a user would save one. */
export function notebookOf(cells: readonly string[]): string {
  return JSON.stringify({
    cells: cells.map((source) => ({ cell_type: "code", execution_count: null, metadata: {}, outputs: [], source })),
    metadata: { kernelspec: { name: "meshtrain-tslab", display_name: "TypeScript (meshtrain)", language: "typescript" } },
    nbformat: 4,
    nbformat_minor: 5,
  });
}

/**
 * One notebook open in Jupyter Notebook's classic front end, driven as a user does: menus,
 * toolbar buttons and dialogs. Page code is given as strings: it runs in Chromium, whose DOM
 * types this project does not compile against.
 */
export class ClassicNotebook {
  private constructor(readonly page: Page) {}

  static async open(browser: Browser, server: NotebookServer, name: string): Promise<ClassicNotebook> {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(`${server.base}/notebooks/${encodeURIComponent(name)}?token=${server.token}`);
    const nb = new ClassicNotebook(page);
    await nb.kernelIdle(90_000, `the kernel of ${name} to start`);
    return nb;
  }

  /** Waits until the kernel indicator shows an idle, connected kernel. */
  async kernelIdle(timeoutMs: number, what: string): Promise<void> {
    await this.page
      .waitForFunction("window.Jupyter?.notebook?.kernel?.is_connected() && document.querySelector('#kernel_indicator_icon.kernel_idle_icon') !== null", null, { timeout: timeoutMs, polling: 200 })
      .catch((e: unknown) => {
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${String(e)}`);
      });
  }

  async menu(top: string, item: string): Promise<void> {
    await this.page.click(`#${top}`);
    await this.page.click(`#${item} > a`);
  }

  /** Cell > Run All, then waits until every code cell has run (a number in its prompt) and the kernel is idle. */
  async runAll(timeoutMs: number): Promise<void> {
    await this.menu("celllink", "run_all_cells");
    await this.page
      .waitForFunction(
        "Array.from(document.querySelectorAll('.code_cell .input_prompt')).every((p) => /In\\s*\\[\\d+\\]/.test(p.textContent))",
        null,
        { timeout: timeoutMs, polling: 250 },
      )
      .catch(async () => {
        const prompts = await this.page.locator(".code_cell .input_prompt").allInnerTexts();
        throw new Error(`Run All did not finish in ${timeoutMs} ms; the prompts: ${prompts.join(" ")}`);
      });
    await this.kernelIdle(30_000, "the kernel to be idle after Run All");
  }

  /** Selects code cell `index` (from 0) and presses the toolbar's Run button; returns at once. */
  async run(index: number): Promise<void> {
    await this.page.locator(".code_cell .input_prompt").nth(index).click();
    await this.page.click('button[data-jupyter-action="jupyter-notebook:run-cell-and-select-next"]');
  }

  /** Waits until code cell `index` has run (its prompt has a number). */
  async ran(index: number, timeoutMs: number): Promise<void> {
    await this.page.locator(".code_cell .input_prompt").nth(index).filter({ hasText: /In\s*\[\d+\]/ }).waitFor({ timeout: timeoutMs });
  }

  /** Waits until one of code cell `index`'s outputs shows text matching `text`. */
  async shows(index: number, text: RegExp, timeoutMs: number): Promise<void> {
    await this.page.locator(".code_cell").nth(index).locator(".output_subarea").filter({ hasText: text }).first().waitFor({ timeout: timeoutMs });
  }

  /** The toolbar's stop button (interrupt the kernel). */
  async stop(): Promise<void> {
    await this.page.click('button[data-jupyter-action="jupyter-notebook:interrupt-kernel"]');
  }

  /** Kernel > Restart, confirmed in its dialog; waits for the new kernel. */
  async restart(): Promise<void> {
    await this.menu("kernellink", "restart_kernel");
    await this.page.locator(".modal-dialog button.btn-danger", { hasText: "Restart" }).click();
    await this.page.waitForFunction("document.querySelector('#kernel_indicator_icon.kernel_idle_icon') === null", null, { timeout: 10_000 }).catch(() => undefined);
    await this.kernelIdle(90_000, "the restarted kernel");
  }

  /** What each code cell shows, in order. */
  async outputs(): Promise<ShownOutput[][]> {
    const cells: ShownOutput[][] = [];
    for (const cell of await this.page.locator(".code_cell").all()) {
      const shown: ShownOutput[] = [];
      for (const out of await cell.locator(".output_subarea").all()) {
        shown.push({ kind: (await out.getAttribute("class")) ?? "", text: await out.innerText(), svgs: await out.locator("svg").count() });
      }
      cells.push(shown);
    }
    return cells;
  }

  close(): Promise<void> {
    return this.page.close();
  }
}
