/** Where progress goes: a terminal gets one line redrawn in place, anything else a line now and then. */
export interface ProgressOutput {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

const formatDuration = (seconds: number): string => {
  if (!Number.isFinite(seconds)) return '--';
  const s = Math.round(seconds);
  return s >= 3600
    ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
    : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
};

/**
 * Progress of a long job: done/total, rate, ETA. On a terminal, a bar redrawn in place (at most 10
 * times a second); otherwise a plain line every `intervalMs`, fit for logs.
 */
export class Progress {
  private readonly started = performance.now();
  private lastDrawn = 0;
  private note = '';

  constructor(
    private readonly label: string,
    private total: number,
    private readonly out: ProgressOutput,
    private readonly intervalMs = 5000,
  ) {}

  private line(done: number): string {
    const seconds = (performance.now() - this.started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    const share = this.total > 0 ? Math.min(1, done / this.total) : 1;
    const eta = rate > 0 ? (this.total - done) / rate : Infinity;
    return (
      `${this.label} ${done.toLocaleString('en')}/${this.total.toLocaleString('en')} (${(share * 100).toFixed(1)}%) ` +
      `${Math.round(rate).toLocaleString('en')}/s ETA ${formatDuration(eta)}${this.note ? ` ${this.note}` : ''}`
    );
  }

  /** `note` says what is being done now (shown after the figures). */
  update(done: number, total = this.total, note = this.note): void {
    this.total = Math.max(total, done);
    this.note = note;
    const now = performance.now();
    if (now - this.lastDrawn < (this.out.isTTY ? 100 : this.intervalMs)) return;
    this.lastDrawn = now;
    if (this.out.isTTY) {
      const columns = this.out.columns ?? 80;
      const width = Math.max(10, Math.min(40, columns - 70));
      const filled = this.total > 0 ? Math.round((Math.min(done, this.total) / this.total) * width) : width;
      // one line, cut to the terminal, so that redrawing in place never wraps
      this.out.write(
        `\r${`[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${this.line(done)}`.slice(0, columns - 1)}\x1b[K`,
      );
    } else {
      this.out.write(`${this.line(done)}\n`);
    }
  }

  finish(done: number): void {
    this.lastDrawn = 0;
    this.total = Math.max(this.total, done);
    if (this.out.isTTY) this.out.write(`\r${this.line(done)}\x1b[K\n`);
    else this.out.write(`${this.line(done)}\n`);
  }
}
