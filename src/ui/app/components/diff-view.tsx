import { diff, type DiffNode } from '../lib/diff';
import { scalar } from '../lib/format';

interface Line {
  depth: number;
  label: string;
  kind: 'same' | 'added' | 'removed' | 'changed' | 'open' | 'close' | 'skipped';
  old?: string;
  new?: string;
}

const preview = (value: unknown, max = 120): string => {
  const text = scalar(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
};

/** Runs of more unchanged siblings than this are folded into one line. */
const UNCHANGED_RUN = 3;

function lines(node: DiffNode, label: string, depth: number, out: Line[]): void {
  switch (node.kind) {
    case 'same':
      out.push({ depth, label, kind: 'same', old: preview(node.value), new: preview(node.value) });
      return;
    case 'added':
      out.push({ depth, label, kind: 'added', new: preview(node.value) });
      return;
    case 'removed':
      out.push({ depth, label, kind: 'removed', old: preview(node.value) });
      return;
    case 'changed':
      out.push({ depth, label, kind: 'changed', old: preview(node.old, 400), new: preview(node.new, 400) });
      return;
    default: {
      const children =
        node.kind === 'object'
          ? node.entries.map((entry) => ({ label: entry.key, node: entry.node }))
          : node.items.map((item) => ({ label: `[${item.newIndex ?? item.oldIndex}]`, node: item.node }));
      out.push({
        depth,
        label,
        kind: 'open',
        old: node.kind === 'object' ? '{' : '[',
        new: node.kind === 'object' ? '{' : '[',
      });
      let run: typeof children = [];
      const flush = () => {
        if (run.length > UNCHANGED_RUN)
          out.push({
            depth: depth + 1,
            label: '',
            kind: 'skipped',
            old: `… ${run.length} unchanged`,
            new: `… ${run.length} unchanged`,
          });
        else for (const child of run) lines(child.node, child.label, depth + 1, out);
        run = [];
      };
      for (const child of children) {
        if (child.node.kind === 'same') run.push(child);
        else {
          flush();
          lines(child.node, child.label, depth + 1, out);
        }
      }
      flush();
      out.push({
        depth,
        label: '',
        kind: 'close',
        old: node.kind === 'object' ? '}' : ']',
        new: node.kind === 'object' ? '}' : ']',
      });
    }
  }
}

const SIGN: Record<Line['kind'], string> = {
  same: ' ',
  added: '+',
  removed: '−',
  changed: '~',
  open: ' ',
  close: ' ',
  skipped: ' ',
};

function Label({ line }: { line: Line }) {
  return line.label ? <span class="diff-key">{line.label}: </span> : null;
}

const indent = (line: Line) => ({ paddingLeft: `${line.depth * 1.2 + 0.4}em` });

/** Old and new value of one field change, diffed structurally; `mode` picks inline or side by side. */
export function DiffView({
  field,
  before,
  after,
  mode,
}: {
  field: string;
  before: unknown;
  after: unknown;
  mode: 'inline' | 'split';
}) {
  const out: Line[] = [];
  lines(diff(before, after), '', 0, out);
  return mode === 'split' ? <SplitDiff field={field} rows={out} /> : <InlineDiff field={field} rows={out} />;
}

/** The old value left, the new right, a row per line. */
function SplitDiff({ field, rows }: { field: string; rows: Line[] }) {
  return (
    <table class="diff split" aria-label={`Changes of ${field}, old and new side by side`}>
      <thead>
        <tr>
          <th scope="col">old</th>
          <th scope="col">new</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((line, index) => (
          <tr key={index} class={`diff-${line.kind}`}>
            <td style={indent(line)}>
              {line.old !== undefined ? (
                <>
                  <Label line={line} />
                  <span class={line.kind === 'changed' || line.kind === 'removed' ? 'del' : ''}>{line.old}</span>
                </>
              ) : null}
            </td>
            <td style={indent(line)}>
              {line.new !== undefined ? (
                <>
                  <Label line={line} />
                  <span class={line.kind === 'changed' || line.kind === 'added' ? 'ins' : ''}>{line.new}</span>
                </>
              ) : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** One column, as a patch reads: a changed value is its old line then its new one. */
function InlineDiff({ field, rows }: { field: string; rows: Line[] }) {
  return (
    <div class="diff inline" role="group" aria-label={`Changes of ${field}`}>
      {rows.flatMap((line, index) =>
        line.kind === 'changed'
          ? [
              <div key={`${index}-old`} class="diff-removed" style={indent(line)}>
                <span class="sign" aria-hidden="true">
                  −
                </span>
                <Label line={line} />
                <span class="del">{line.old}</span>
              </div>,
              <div key={`${index}-new`} class="diff-added" style={indent(line)}>
                <span class="sign" aria-hidden="true">
                  +
                </span>
                <Label line={line} />
                <span class="ins">{line.new}</span>
              </div>,
            ]
          : [<InlineLine key={index} line={line} />],
      )}
    </div>
  );
}

function InlineLine({ line }: { line: Line }) {
  const text = line.kind === 'added' ? line.new : line.old;
  return (
    <div class={`diff-${line.kind}`} style={indent(line)}>
      <span class="sign" aria-hidden="true">
        {SIGN[line.kind]}
      </span>
      {line.kind === 'added' ? (
        <span class="sr-only">added </span>
      ) : line.kind === 'removed' ? (
        <span class="sr-only">removed </span>
      ) : null}
      <Label line={line} />
      <span class={line.kind === 'added' ? 'ins' : line.kind === 'removed' ? 'del' : ''}>{text}</span>
    </div>
  );
}
