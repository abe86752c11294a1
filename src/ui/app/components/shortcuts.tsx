import { useEffect, useRef, useState } from 'preact/hooks';
import { navigate } from '../lib/router';

/** `g` then a letter goes to a view. */
const GO_TO: Record<string, [path: string, label: string]> = {
  i: ['/inventory', 'Inventory'],
  c: ['/changes', 'Change search'],
  q: ['/query', 'Query'],
  s: ['/stats', 'Statistics'],
  o: ['/sources', 'Sources'],
  a: ['/admin', 'Administration'],
};

/** Typing into a field is typing, not a shortcut. */
function typing(target: EventTarget | null): boolean {
  const element = target as HTMLElement | null;
  return element !== null && (element.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(element.tagName));
}

/** The view's search or filter box: the change search, else the first text field of the view. */
function searchBox(): HTMLElement | null {
  return (
    document.getElementById('change-query') ??
    document.getElementById('query-text') ??
    document.querySelector<HTMLElement>('main input[type="search"], main input:not([type]), main input[type="text"]')
  );
}

/**
 * Keyboard shortcuts: `/` to the search box, `g` and a letter to a view, `?` for this list (and
 * Escape to close it). Never while typing in a field, never with Ctrl, Alt or Meta.
 */
export function Shortcuts() {
  const [open, setOpen] = useState(false);
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    let pending = false;
    const onKey = (event: KeyboardEvent) => {
      if (event.ctrlKey || event.altKey || event.metaKey || typing(event.target)) return;
      if (pending) {
        pending = false;
        const target = GO_TO[event.key];
        if (target) {
          event.preventDefault();
          navigate(target[0]);
        }
        return;
      }
      if (event.key === 'g') pending = true;
      else if (event.key === '?') setOpen(true);
      else if (event.key === '/') {
        const box = searchBox();
        if (box) {
          event.preventDefault();
          box.focus();
        }
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
  useEffect(() => {
    if (open && dialog.current && !dialog.current.open) dialog.current.showModal();
  }, [open]);
  if (!open) return null;
  return (
    <dialog ref={dialog} class="shortcuts" aria-labelledby="shortcuts-title" onClose={() => setOpen(false)}>
      <h2 id="shortcuts-title">Keyboard shortcuts</h2>
      <dl>
        <dt>
          <kbd>/</kbd>
        </dt>
        <dd>Search or filter this view</dd>
        {Object.entries(GO_TO).flatMap(([key, [, label]]) => [
          <dt key={`k${key}`}>
            <kbd>g</kbd> <kbd>{key}</kbd>
          </dt>,
          <dd key={`d${key}`}>Go to {label.toLowerCase()}</dd>,
        ])}
        <dt>
          <kbd>?</kbd>
        </dt>
        <dd>Show this list</dd>
      </dl>
      <form method="dialog">
        <button type="submit">Close</button>
      </form>
    </dialog>
  );
}
