import { api } from '../../lib/api';
import type { CiQuality } from '../../lib/api-shapes';
import { dateTime } from '../../lib/format';
import { Link } from '../../lib/router';
import { useLoad } from '../../components/states';

/** The CI page's quality panel: what is missing, wrong or stale about this CI. Nothing for a CI not checked. */
export function CiQualityPanel({ ciId }: { ciId: string }) {
  const loaded = useLoad(ciId, (signal) => api<CiQuality>(`/api/v1/quality/configuration-items/${ciId}`, { signal }));
  const quality = loaded.data;
  // only active CIs are judged; one not checked yet is a moment behind its write
  if (!quality || !quality.checked) return null;
  const problems: [string, string][] = [
    ...(quality.missing.length > 0 ? [['Missing', quality.missing.join(', ')] as [string, string]] : []),
    ...(quality.missing_recommended.length > 0
      ? [['Recommended, missing', quality.missing_recommended.join(', ')] as [string, string]]
      : []),
    ...(quality.orphan ? [['Orphan', quality.orphan] as [string, string]] : []),
    ...(quality.duplicate ? [['Duplicate', quality.duplicate] as [string, string]] : []),
    ...(quality.stale_since ? [['Stale', `since ${dateTime(quality.stale_since)}`] as [string, string]] : []),
    ...(quality.unfresh ? [['Not fresh', quality.unfresh] as [string, string]] : []),
    ...quality.rules.filter((rule) => !rule.passed).map((rule) => ['Fails rule', rule.name] as [string, string]),
  ];
  return (
    <section class="ci-quality" aria-labelledby="ci-quality-heading">
      <h2 id="ci-quality-heading">Data quality</h2>
      <p>
        Completeness {quality.completeness} %{quality.owner ? ` · owner ${quality.owner}` : ''} ·{' '}
        <Link href="/quality">health of the inventory</Link>
      </p>
      {problems.length === 0 ? (
        <p>Nothing missing, stale or broken.</p>
      ) : (
        <dl>
          {problems.map(([term, detail], i) => (
            <div key={i}>
              <dt>{term}</dt>
              <dd>{detail}</dd>
            </div>
          ))}
        </dl>
      )}
    </section>
  );
}
