import { useState } from 'preact/hooks';
import { api, can, type Me } from '../../lib/api';
import type { QualityRule, QualityRulePreview } from '../../lib/api-shapes';
import { count } from '../../lib/format';
import { Link } from '../../lib/router';
import { DataTable } from '../../components/data-table';
import { TextField } from '../../components/fields';
import { Empty, ErrorBox, Show, useAction, useLoad } from '../../components/states';

const rate = (value: number | null) => (value === null ? '—' : `${value} %`);

/** The tenant's rules with their pass rates, and an editor that previews a rule's pass rate before it is saved. */
export function QualityRules({ me }: { me: Me }) {
  const [version, setVersion] = useState(0);
  const [editing, setEditing] = useState<QualityRule | 'new' | undefined>();
  const loaded = useLoad(`rules ${version}`, (signal) =>
    api<{ items: QualityRule[] }>('/api/v1/quality/rules', { signal }),
  );
  const writes = can(me, 'configuration_items:write');
  const saved = () => {
    setEditing(undefined);
    setVersion(version + 1);
  };
  return (
    <section class="quality" aria-labelledby="rules-heading">
      <h1 id="rules-heading">Data-quality rules</h1>
      <p class="meta">
        Each rule judges the CIs a match selects against another match, in the query language.{' '}
        <Link href="/quality">Back to the scores</Link>
      </p>
      {writes && editing === undefined ? (
        <button type="button" class="primary" onClick={() => setEditing('new')}>
          New rule
        </button>
      ) : null}
      {editing !== undefined ? (
        <RuleEditor
          rule={editing === 'new' ? undefined : editing}
          onDone={saved}
          onCancel={() => setEditing(undefined)}
        />
      ) : null}
      <Show loaded={loaded} what="rules">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No rules yet.</Empty>
          ) : (
            <DataTable
              label="Rules"
              rows={page.items}
              rowKey={(rule) => rule.id}
              columns={[
                { header: 'Name', cell: (rule) => rule.name },
                { header: 'Applies to', cell: (rule) => <code>{rule.applies_to}</code> },
                { header: 'Requires', cell: (rule) => <code>{rule.requires}</code> },
                { header: 'Pass rate', cell: (rule) => (rule.checking ? 'checking…' : rate(rule.pass_rate)) },
                {
                  header: 'Failing',
                  cell: (rule) => (
                    <Link href={`/quality/rule-failures?rule_id=${rule.id}`}>{count(rule.applies - rule.passes)}</Link>
                  ),
                },
                {
                  header: '',
                  cell: (rule) =>
                    writes ? (
                      <button type="button" onClick={() => setEditing(rule)}>
                        Edit
                      </button>
                    ) : null,
                },
              ]}
            />
          )
        }
      </Show>
    </section>
  );
}

function RuleEditor({ rule, onDone, onCancel }: { rule?: QualityRule; onDone: () => void; onCancel: () => void }) {
  const [name, setName] = useState(rule?.name ?? '');
  const [appliesTo, setAppliesTo] = useState(rule?.applies_to ?? '');
  const [requires, setRequires] = useState(rule?.requires ?? '');
  const [preview, setPreview] = useState<QualityRulePreview>();
  const previewing = useAction();
  const saving = useAction();
  const body = { applies_to: appliesTo, requires };
  return (
    <form
      class="rule-editor"
      aria-label={rule ? `Edit ${rule.name}` : 'New rule'}
      onSubmit={(event) => {
        event.preventDefault();
        void saving.run(async () => {
          await api(rule ? `/api/v1/quality/rules/${rule.id}` : '/api/v1/quality/rules', {
            method: rule ? 'PUT' : 'POST',
            body: { name, ...body },
          });
          onDone();
        });
      }}
    >
      <TextField label="Name" value={name} onValue={setName} required />
      <TextField
        label="Applies to"
        value={appliesTo}
        onValue={setAppliesTo}
        required
        placeholder="ci_type = k8s.deployment"
      />
      <TextField
        label="Requires"
        value={requires}
        onValue={setRequires}
        required
        placeholder="raw_data.spec.template.spec.containers.0.resources.limits exists"
      />
      <div class="actions">
        <button
          type="button"
          disabled={previewing.busy || !appliesTo || !requires}
          onClick={() =>
            void previewing.run(async () =>
              setPreview(await api<QualityRulePreview>('/api/v1/quality/rules/preview', { method: 'POST', body })),
            )
          }
        >
          Preview
        </button>
        <button type="submit" class="primary" disabled={saving.busy}>
          Save
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
      {previewing.error ? <ErrorBox error={previewing.error} /> : null}
      {saving.error ? <ErrorBox error={saving.error} /> : null}
      {preview ? (
        <p role="status">
          Applies to {count(preview.applies)} CIs, {count(preview.passes)} pass ({rate(preview.pass_rate)})
          {preview.failing.length > 0 ? `; failing include ${preview.failing.map((ci) => ci.name).join(', ')}` : ''}.
        </p>
      ) : null}
    </form>
  );
}
