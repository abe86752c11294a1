import { setParams } from '../lib/router';
import { fromLocalInput, PRESETS, toLocalInput, windowOf } from '../lib/window';

/** Presets and explicit bounds, kept in the URL (`range`, or `from` and `to`). */
export function WindowPicker({ params, allowAll = true }: { params: URLSearchParams; allowAll?: boolean }) {
  const range = params.get('range') ?? '';
  const window = windowOf(params);
  const explicit = !PRESETS.some(([name]) => name === range);
  return (
    <fieldset class="window">
      <legend>Time window</legend>
      <div class="segmented">
        {allowAll ? (
          <label>
            <input type="radio" name="range" checked={explicit && !params.get('from') && !params.get('to')} onChange={() => setParams({ range: undefined, from: undefined, to: undefined, offset: undefined })} />
            Any time
          </label>
        ) : null}
        {PRESETS.map(([name, label]) => (
          <label key={name}>
            <input type="radio" name="range" checked={range === name} onChange={() => setParams({ range: name, from: undefined, to: undefined, offset: undefined })} />
            {label}
          </label>
        ))}
      </div>
      <label>
        From{' '}
        <input
          type="datetime-local"
          value={explicit ? toLocalInput(window.start) : ''}
          onChange={(event) => setParams({ range: undefined, from: fromLocalInput((event.currentTarget as HTMLInputElement).value), offset: undefined })}
        />
      </label>
      <label>
        To{' '}
        <input
          type="datetime-local"
          value={explicit ? toLocalInput(window.end) : ''}
          onChange={(event) => setParams({ range: undefined, to: fromLocalInput((event.currentTarget as HTMLInputElement).value), offset: undefined })}
        />
      </label>
    </fieldset>
  );
}
