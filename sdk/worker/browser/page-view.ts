import type { CommToCompute } from "../bridge";
import { tabBackend } from "./backend-choice";

/**
 * What the worker page shows: what the tab is doing, its rank, the backend it chose and why,
 * the steps it computed and how fast, and a Leave button. Elements are made here (the page's
 * Content-Security-Policy allows its own script only, no inline code).
 */
export class PageView {
  private readonly statusEl: HTMLElement;
  private readonly rankEl: HTMLElement;
  private readonly backendEl: HTMLElement;
  private readonly stepsEl: HTMLElement;
  private readonly leave: HTMLButtonElement;
  private steps = 0;
  private readonly stepTimes: number[] = [];

  constructor(private readonly doc: Document) {
    doc.title = "meshtrain worker";
    const main = doc.createElement("main");
    main.style.font = "16px system-ui, sans-serif";
    main.style.maxWidth = "40em";
    main.style.margin = "2em auto";
    const h = doc.createElement("h1");
    h.textContent = "meshtrain worker";
    const about = doc.createElement("p");
    about.textContent =
      "This tab trains part of a model for the notebook that sent you this link, on this device's GPU where the browser offers one. It reads no files and asks for nothing; close it or press Leave at any moment.";
    this.statusEl = this.line(main, "status", "starting");
    this.rankEl = this.line(main, "rank", "not yet assigned");
    this.backendEl = this.line(main, "backend", "chosen when the driver starts the cluster");
    this.stepsEl = this.line(main, "steps", "0");
    this.leave = doc.createElement("button");
    this.leave.id = "leave";
    this.leave.textContent = "Leave";
    main.prepend(h, about);
    main.append(this.leave);
    doc.body.append(main);
  }

  private line(parent: HTMLElement, id: string, text: string): HTMLElement {
    const p = this.doc.createElement("p");
    const label = this.doc.createElement("strong");
    label.textContent = `${id}: `;
    const value = this.doc.createElement("span");
    value.id = id;
    value.textContent = text;
    p.append(label, value);
    parent.append(p);
    return value;
  }

  status(text: string): void {
    this.statusEl.textContent = text;
  }

  joined(rank: number, worldSize: number): void {
    this.rankEl.textContent = `${rank} of ${worldSize}`;
    this.status("joined: waiting for the driver's work");
  }

  /** Requests the page's host is about to serve, counted and shown. */
  observe(m: CommToCompute): void {
    if (m.kind !== "request" || m.via !== undefined) return;
    if (m.msg.type === "join") this.status("starting the backend and measuring its speed");
    else if (m.msg.type === "load") this.status("loading the model");
    else if (m.msg.type === "step") this.stepped();
    else if (m.msg.type === "release") this.status("fit over: waiting for the driver's next work");
    const b = tabBackend();
    if (b) this.backendEl.textContent = `${b.device}; ${b.notes.join("; ")}`;
  }

  private stepped(): void {
    this.steps++;
    const now = performance.now();
    this.stepTimes.push(now);
    while (this.stepTimes.length > 20) this.stepTimes.shift();
    const span = (now - this.stepTimes[0]!) / 1000;
    const rate =
      this.stepTimes.length > 1 && span > 0 ? `, ${((this.stepTimes.length - 1) / span).toFixed(1)} steps/s` : "";
    this.stepsEl.textContent = `${this.steps}${rate}`;
    this.status("training");
  }

  onLeave(fn: () => void): void {
    this.leave.addEventListener("click", fn, { once: true });
  }

  left(): void {
    this.ended("you left: the cluster goes on without this tab where its strategy can");
  }

  /** The first reason the tab stopped stays (leaving closes the driver's link, which then reports its close). */
  ended(why: string): void {
    if (this.leave.disabled) return;
    this.status(`stopped: ${why}`);
    this.leave.disabled = true;
  }

  failed(why: string): void {
    if (this.leave.disabled) return;
    this.status(`failed: ${why}`);
    this.statusEl.setAttribute("data-failed", "true");
    this.leave.disabled = true;
  }
}
