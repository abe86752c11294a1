import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { completionContext, type Completion, type CompletionContext } from '../lib/query-completion';
import { highlight } from '../lib/query-tokens';

/** A problem in the text, at an offset: the parser's as one types, or the server's 422. */
export interface EditorProblem {
  offset: number;
  line: number;
  column: number;
  message: string;
  expected?: readonly string[];
  suggestions?: readonly string[];
}

interface Props {
  id: string;
  label: string;
  value: string;
  onValue: (text: string) => void;
  /** Ctrl+Enter (⌘+Enter). */
  onRun: () => void;
  problem: EditorProblem | undefined;
  complete: (context: CompletionContext) => Completion[];
}

/** After these, completion opens by itself: a hop's bracket, a pipe, a list or an aggregate's parenthesis. */
const OPENS_AFTER = /(?:-\[|\|\s*|\(|,\s*)$/;

interface Open {
  context: CompletionContext;
  items: Completion[];
  active: number;
}

/** The coloured copy of the text behind the (transparent) textarea, with the problem's span marked. */
function Highlighted({
  text,
  errorAt,
  box,
}: {
  text: string;
  errorAt: number | undefined;
  box: { current: HTMLPreElement | null };
}) {
  const segments = useMemo(() => highlight(text, errorAt), [text, errorAt]);
  return (
    <pre ref={box} class="query-highlight" aria-hidden="true">
      {segments.map((segment, index) =>
        segment.error ? (
          <mark key={index} class={`tok-${segment.kind} query-error-mark`}>
            {segment.text}
          </mark>
        ) : (
          <span key={index} class={`tok-${segment.kind}`}>
            {segment.text}
          </span>
        ),
      )}
      {/* a last empty line still has a height */}
      {'\n'}
    </pre>
  );
}

function CompletionList({ id, open, onPick }: { id: string; open: Open; onPick: (item: Completion) => void }) {
  return (
    <ul id={id} role="listbox" class="query-completions" aria-label="Completions">
      {open.items.map((item, index) => (
        <li
          key={item.label}
          id={`${id}-${index}`}
          role="option"
          aria-selected={index === open.active}
          class={index === open.active ? 'active' : undefined}
          // the textarea keeps the focus: a click picks without blurring it
          onMouseDown={(event) => {
            event.preventDefault();
            onPick(item);
          }}
        >
          <span class={`tok-${item.kind === 'relationship' ? 'relationship' : item.kind}`}>{item.label}</span>
          <span class="meta"> {item.kind}</span>
        </li>
      ))}
    </ul>
  );
}

/** What the problem says under the editor: the message, and what was expected there. */
function ProblemText({ id, problem }: { id: string; problem: EditorProblem }) {
  return (
    <div id={id} class="query-problem" aria-live="polite">
      <strong>
        Line {problem.line}, column {problem.column}:
      </strong>{' '}
      {problem.message}
      {problem.suggestions && problem.suggestions.length > 0 && !/did you mean/i.test(problem.message) ? (
        <span class="meta"> Did you mean {problem.suggestions.join(', ')}?</span>
      ) : null}
      {problem.expected && problem.expected.length > 0 && !/\bexpected\b/.test(problem.message) ? (
        <span class="meta"> Expected: {problem.expected.join(', ')}.</span>
      ) : null}
    </div>
  );
}

/**
 * The completion's state and keys: it opens as a word is typed (or with Ctrl+Space) and inserts the
 * pick. Only where it stands is kept: the list is worked out at each drawing, so names the server
 * sends while it is open join it.
 */
function useCompletionList(props: Props, area: { current: HTMLTextAreaElement | null }) {
  const [at, setAt] = useState<{ cursor: number; active: number } | null>(null);
  const caret = useRef<number | null>(null);
  useLayoutEffect(() => {
    if (caret.current === null || !area.current) return;
    area.current.setSelectionRange(caret.current, caret.current);
    caret.current = null;
  });
  const context = at ? completionContext(props.value, Math.min(at.cursor, props.value.length)) : null;
  const items = context ? props.complete(context) : [];
  const open: Open | null =
    context && items.length > 0 ? { context, items, active: Math.min(at!.active, items.length - 1) } : null;
  const show = (text: string, cursor: number, always: boolean) => {
    const word = completionContext(text, cursor).word;
    const wanted = always || word.length > 0 || OPENS_AFTER.test(text.slice(0, cursor));
    setAt(wanted ? { cursor, active: 0 } : null);
  };
  const pick = (item: Completion) => {
    if (!open) return;
    const { from, to } = open.context;
    const text = props.value.slice(0, from) + item.insert + props.value.slice(to);
    caret.current = from + item.insert.length;
    props.onValue(text);
    // a path, a bracket or a parenthesis goes on: complete what follows it
    setAt(/[.[(]$/.test(item.insert) ? { cursor: caret.current, active: 0 } : null);
  };
  const move = (by: number) =>
    open && setAt({ cursor: at!.cursor, active: (open.active + by + open.items.length) % open.items.length });
  return { open, close: () => setAt(null), show, pick, move };
}

/**
 * The query's text: a textarea over a coloured copy of it (the shared grammar's tokens), the
 * problem's position marked, completion from what the grammar expects at the cursor. Ctrl+Enter
 * runs; in the list, the arrows move, Enter or Tab picks, Escape closes.
 */
export function QueryEditor(props: Props) {
  const area = useRef<HTMLTextAreaElement>(null);
  const box = useRef<HTMLPreElement>(null);
  const list = useCompletionList(props, area);
  const { open } = list;
  const listId = `${props.id}-completions`;
  const problemId = `${props.id}-problem`;
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      list.close();
      props.onRun();
    } else if (event.key === ' ' && event.ctrlKey) {
      event.preventDefault();
      const target = event.currentTarget as HTMLTextAreaElement;
      list.show(target.value, target.selectionStart, true);
    } else if (open && ['ArrowDown', 'ArrowUp', 'Enter', 'Tab', 'Escape'].includes(event.key)) {
      event.preventDefault();
      if (event.key === 'ArrowDown') list.move(1);
      else if (event.key === 'ArrowUp') list.move(-1);
      else if (event.key === 'Escape') list.close();
      else list.pick(open.items[open.active]!);
    }
  };
  return (
    <div class="query-editor">
      <label for={props.id}>{props.label}</label>
      <div class="query-frame">
        <Highlighted text={props.value} errorAt={props.problem?.offset} box={box} />
        <textarea
          ref={area}
          id={props.id}
          value={props.value}
          rows={4}
          spellcheck={false}
          autocomplete="off"
          autocapitalize="off"
          aria-autocomplete="list"
          aria-controls={open ? listId : undefined}
          aria-activedescendant={open ? `${listId}-${open.active}` : undefined}
          aria-invalid={props.problem !== undefined}
          aria-describedby={props.problem ? problemId : undefined}
          onInput={(event) => {
            const target = event.currentTarget;
            props.onValue(target.value);
            list.show(target.value, target.selectionStart, false);
          }}
          onKeyDown={onKeyDown}
          onBlur={() => list.close()}
          onClick={() => list.close()}
          onScroll={(event) => {
            if (box.current) box.current.scrollTop = event.currentTarget.scrollTop;
          }}
        />
        {open ? <CompletionList id={listId} open={open} onPick={list.pick} /> : null}
      </div>
      {props.problem ? <ProblemText id={problemId} problem={props.problem} /> : null}
    </div>
  );
}
