import type { ComponentChildren } from 'preact';
import { useLayoutEffect, useReducer, useRef, useState } from 'preact/hooks';
import {
  elementScroll,
  measureElement,
  observeElementOffset,
  observeElementRect,
  Virtualizer,
  type VirtualizerOptions,
} from '@tanstack/virtual-core';

/**
 * A scrolling list that renders only the rows in view (plus a few), measuring each as it renders,
 * so rows may grow when expanded: thousands of change records scroll without building thousands
 * of nodes. `onNearEnd` asks for more when the last rows come into view.
 */
export function VirtualList(props: {
  count: number;
  estimate: number;
  label: string;
  row: (index: number) => ComponentChildren;
  onNearEnd?: () => void;
}) {
  const { count, estimate, label, row, onNearEnd } = props;
  const scroller = useRef<HTMLDivElement>(null);
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const options: VirtualizerOptions<HTMLDivElement, HTMLElement> = {
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => estimate,
    scrollToFn: elementScroll,
    observeElementRect,
    observeElementOffset,
    measureElement,
    overscan: 6,
    onChange: () => rerender(0),
  };
  const [virtualizer] = useState(() => new Virtualizer(options));
  virtualizer.setOptions(options);
  useLayoutEffect(() => virtualizer._didMount(), [virtualizer]);
  useLayoutEffect(() => virtualizer._willUpdate());
  const items = virtualizer.getVirtualItems();
  const last = items[items.length - 1];
  useLayoutEffect(() => {
    if (onNearEnd && last && last.index >= count - 5) onNearEnd();
  }, [last?.index, count]);
  return (
    <div ref={scroller} class="virtual" role="list" aria-label={label} tabIndex={0}>
      <div style={{ height: `${virtualizer.getTotalSize()}px`, position: 'relative' }}>
        {items.map((item) => (
          <div
            key={item.key}
            role="listitem"
            data-index={item.index}
            ref={(element) => {
              if (element) virtualizer.measureElement(element);
            }}
            style={{ position: 'absolute', top: 0, left: 0, width: '100%', transform: `translateY(${item.start}px)` }}
          >
            {row(item.index)}
          </div>
        ))}
      </div>
    </div>
  );
}
