import { useState } from 'preact/hooks';

const isContainer = (value: unknown): value is Record<string, unknown> | unknown[] =>
  typeof value === 'object' && value !== null;

/** `raw_data.spec.containers.0.image`: the dotted path the API's filters and `include_attributes` take (array positions as segments). */
export const childPath = (parent: string, key: string | number): string => `${parent}.${key}`;

function CopyPath({ path }: { path: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="copy"
      aria-label={`Copy path ${path}`}
      title={path}
      onClick={(event) => {
        event.preventDefault();
        void navigator.clipboard?.writeText(path).then(() => {
          setDone(true);
          setTimeout(() => setDone(false), 1200);
        });
      }}
    >
      {done ? 'copied' : 'copy path'}
    </button>
  );
}

function Leaf({ value }: { value: unknown }) {
  if (isContainer(value)) return <span class="json-empty">{Array.isArray(value) ? '[]' : '{}'}</span>;
  const kind = value === null ? 'null' : typeof value;
  return <span class={`json-${kind}`}>{typeof value === 'string' ? JSON.stringify(value) : String(value)}</span>;
}

/** One key of an object or element of an array; containers open on demand (their children render only when open). */
function Node({ name, value, path, depth }: { name: string; value: unknown; path: string; depth: number }) {
  const [open, setOpen] = useState(depth < 1);
  // an empty object or array has nothing to open: it reads as its value, `{}` or `[]`
  if (!isContainer(value) || (Array.isArray(value) ? value.length === 0 : Object.keys(value).length === 0)) {
    return (
      <li>
        <span class="json-key">{name}</span>: <Leaf value={value} /> <CopyPath path={path} />
      </li>
    );
  }
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((item, index) => [index, item])
    : Object.entries(value);
  const summary = Array.isArray(value) ? `[${value.length}]` : `{${entries.length}}`;
  return (
    <li>
      <details open={open} onToggle={(event) => setOpen((event.currentTarget as HTMLDetailsElement).open)}>
        <summary>
          <span class="json-key">{name}</span> <span class="json-size">{summary}</span>
        </summary>
        {/* a button inside the summary would be a control inside a control */}
        {open ? <CopyPath path={path} /> : null}
        {open ? (
          <ul class="json-children">
            {entries.map(([key, child]) => (
              <Node
                key={key}
                name={typeof key === 'number' ? `[${key}]` : key}
                value={child}
                path={childPath(path, key)}
                depth={depth + 1}
              />
            ))}
          </ul>
        ) : null}
      </details>
    </li>
  );
}

export function JsonTree({ value, root }: { value: unknown; root: string }) {
  return (
    <ul class="json-tree" aria-label={root}>
      <Node name={root} value={value} path={root} depth={0} />
    </ul>
  );
}
