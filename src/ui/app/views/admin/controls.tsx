import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../../lib/api';
import { ErrorBox, useAction } from '../../components/states';

/** A section's create form: the button waits for the server, and a refusal shows below the form. */
export function CreateForm({
  label,
  submit,
  onSubmit,
  children,
}: {
  label: string;
  submit: string;
  onSubmit: () => Promise<void>;
  children: ComponentChildren;
}) {
  const action = useAction();
  return (
    <>
      <form
        class="inline-form"
        aria-label={label}
        onSubmit={(event) => {
          event.preventDefault();
          void action.run(onSubmit);
        }}
      >
        {children}
        <button type="submit" disabled={action.busy}>
          {submit}
        </button>
      </form>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </>
  );
}

/** Revokes (or deletes: `verb`) after a second click, so a stray click removes nothing. */
export function RevokeButton({
  label,
  path,
  done,
  verb = 'Revoke',
}: {
  label: string;
  path: string;
  done: () => void;
  verb?: string;
}) {
  const [armed, setArmed] = useState(false);
  const action = useAction();
  return (
    <>
      <button
        type="button"
        class={armed ? 'danger' : ''}
        aria-label={armed ? `Confirm: ${label}` : label}
        disabled={action.busy}
        onClick={() => {
          if (!armed) {
            setArmed(true);
            return;
          }
          void action.run(async () => {
            await api(path, { method: 'DELETE' });
            done();
          });
        }}
      >
        {armed ? `Confirm ${verb.toLowerCase()}` : verb}
      </button>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </>
  );
}
