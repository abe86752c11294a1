import { expect } from 'chai';
import type { Field, Query } from '../../src/platform/query-language/ast.js';
import { parseQuery } from '../../src/platform/query-language/parse.js';
import {
  ciTypeAt,
  completionContext,
  completions,
  expectedAfter,
  splitPath,
  type Vocabulary,
} from '../../src/ui/app/lib/query-completion.js';
import { highlight, tokenize, type TokenKind } from '../../src/ui/app/lib/query-tokens.js';

const QUERIES = [
  'ci_type = k8s.pod and namespace in (shop, payments) -[runs_on 1..2]-> raw_data.status.nodeInfo.kubeletVersion < "v1.29" | return first | with changes',
  'changed raw_data.spec since now-24h type (CREATED, DELETED) and not name matches "^a" | count by namespace, ci_type',
  'name = checkout-[manages]-> * <-[*]- raw_data.metadata.labels."app.kubernetes.io/name" = $app | sort name desc | limit 20',
  'created_at > 2026-11-30T10:00:00Z or name istarts with cart | avg(raw_data.spec.replicas) by namespace',
  'ci_type = k8s.deployment <-[manages, owned_by]-> status is not null and raw_data.x not exists | fields name, type_data.phase',
  '(name = count or name = "and") and archived since now-7d until 2026-12-01 | min(raw_data.spec.replicas)',
];

const kinds = (text: string) =>
  tokenize(text)
    .filter((t) => t.kind !== 'space')
    .map((t) => `${t.kind}:${t.text}`);

/** Every field the parser found, wherever the tree holds one. */
function fieldsOf(query: Query): Field[] {
  const found: Field[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (node === null || typeof node !== 'object') return;
    const record = node as Record<string, unknown>;
    if (typeof record.name === 'string' && Array.isArray(record.path) && record.at)
      found.push(record as unknown as Field);
    Object.values(record).forEach(walk);
  };
  walk(query);
  return found;
}

describe('the query editor: tokens, highlighting and completion from the shared grammar', () => {
  it('covers the text end to end, every character in one token', () => {
    for (const text of [...QUERIES, 'ci_type = ', 'x -[ru', '"unclosed', '§ name']) {
      const tokens = tokenize(text);
      expect(tokens.map((t) => t.text).join('')).to.equal(text);
      tokens.forEach((t, i) => expect(t.start).to.equal(i === 0 ? 0 : tokens[i - 1]!.end));
    }
  });

  it("colours as the parser reads: each field the tree holds is a field token, each hop's types relationship tokens", () => {
    for (const text of QUERIES) {
      const query = parseQuery(text);
      const tokens = tokenize(text);
      const kindAt = (offset: number, end: number): TokenKind | undefined =>
        tokens.find((t) => t.start === offset && t.end === end)?.kind;
      for (const field of fieldsOf(query))
        expect(kindAt(field.at.offset, field.at.end), `${text}: ${field.name}`).to.equal('field');
      for (const step of query.path)
        if (step.kind === 'hop')
          for (const type of step.types ?? [])
            expect(kindAt(type.at.offset, type.at.end), type.name).to.equal('relationship');
    }
  });

  it('tells keywords, fields, operators, values, times, parameters, hops and pipes apart', () => {
    expect(kinds('ci_type = k8s.pod and namespace in (shop, payments) -[runs_on 1..2]-> *')).to.deep.equal([
      'field:ci_type',
      'operator:=',
      'value:k8s.pod',
      'keyword:and',
      'field:namespace',
      'keyword:in',
      'punctuation:(',
      'value:shop',
      'punctuation:,',
      'value:payments',
      'punctuation:)',
      'hop:-[',
      'relationship:runs_on',
      'number:1..2',
      'hop:]->',
      'operator:*',
    ]);
    expect(kinds('changed name since now-24h | count by namespace')).to.deep.equal([
      'keyword:changed',
      'field:name',
      'keyword:since',
      'time:now-24h',
      'pipe:|',
      'pipe:count',
      'keyword:by',
      'field:namespace',
    ]);
    // a keyword where a value stands is a value; a bare word runs up to a hop
    expect(kinds('name = count-[manages]-> namespace = $ns')).to.deep.equal([
      'field:name',
      'operator:=',
      'value:count',
      'hop:-[',
      'relationship:manages',
      'hop:]->',
      'field:namespace',
      'operator:=',
      'param:$ns',
    ]);
  });

  it('marks the span of a problem, or a space after the text when the problem is at its end', () => {
    const text = 'ci_type = k8s.pod andd name = x';
    const offset = text.indexOf('andd');
    const marked = highlight(text, offset).filter((s) => s.error);
    expect(marked.map((s) => s.text).join('')).to.equal('andd');
    const atEnd = highlight('name = ', 7);
    expect(atEnd[atEnd.length - 1]).to.deep.equal({ text: ' ', kind: 'space', error: true });
    expect(highlight('name = x').some((s) => s.error)).to.equal(false);
  });

  const vocabulary: Vocabulary = {
    ci_types: ['k8s.node', 'k8s.pod'],
    relationship_types: ['manages', 'runs_on'],
    fields: ['name', 'namespace', 'ci_type', 'status', 'created_at', 'raw_data', 'type_data'],
    paths: ['raw_data.spec', 'raw_data.spec.nodeName', 'type_data.phase'],
  };
  const offered = (text: string, cursor = text.length) =>
    completions(completionContext(text, cursor), vocabulary).map((c) => c.label);

  it('asks the parser what may follow, with a character no rule accepts at the cursor', () => {
    expect(expectedAfter('')).to.include.members(['"not"', '"changed"']);
    expect(expectedAfter('').some((e) => e.startsWith('a field'))).to.equal(true);
    expect(expectedAfter('ci_type = ')).to.deep.equal(['a value']);
    expect(expectedAfter('ci_type = k8s.pod ')).to.include.members(['"and"', '"or"', '"|"']);
    // inside a hop or a pipe, where the parser names only the whole
    expect(expectedAfter('x -[')).to.deep.equal(['a relationship type', '"*"']);
    expect(expectedAfter('x | count by ')).to.deep.equal(['a field']);
    // a text that fails before the cursor offers nothing
    expect(expectedAfter('name = = ')).to.deep.equal([]);
  });

  it('completes fields and paths, values of ci_type and status, keywords, relationship types and pipes', () => {
    expect(offered('na')).to.deep.equal(['name', 'namespace']);
    expect(offered('ci_type = k8s.pod and raw_data.sp')).to.deep.equal(['raw_data.spec', 'raw_data.spec.nodeName']);
    expect(offered('ci_type = k8')).to.deep.equal(['k8s.node', 'k8s.pod']);
    expect(offered('status = ar')).to.deep.equal(['archived']);
    expect(offered('created_at > no')).to.include('now-24h');
    expect(offered('ci_type = k8s.pod an')).to.deep.equal(['and']);
    expect(offered('ci_type = k8s.pod -[ru')).to.deep.equal(['runs_on']);
    expect(offered('x -[runs_on ')).to.deep.equal([']->']);
    expect(offered('x = 1 | co')).to.deep.equal(['count', 'count by']);
    expect(offered('x | sort name ')).to.deep.equal(['asc', 'desc']);
    expect(offered('name ')).to.include.members(['=', 'in', 'contains', 'starts with']);
    // the word under the cursor is replaced whole
    const context = completionContext('name = x | sort nam desc', 'name = x | sort na'.length);
    expect([context.from, context.to, context.word]).to.deep.equal([16, 19, 'na']);
  });

  it('names the CI type of the match at the cursor, or past the pipes of the last match', () => {
    expect(ciTypeAt('ci_type = k8s.pod and raw_data.', 'ci_type = k8s.pod and raw_data.')).to.equal('k8s.pod');
    const path = 'ci_type = k8s.deployment -[manages]-> ci_type = "k8s.replicaset" and ';
    expect(ciTypeAt(path, path)).to.equal('k8s.replicaset');
    expect(ciTypeAt('name = x -[manages]-> ', 'name = x -[manages]-> ')).to.equal(undefined);
    const piped = 'ci_type = k8s.node | count by raw_data.';
    expect(ciTypeAt(piped, piped)).to.equal('k8s.node');
    expect(splitPath('raw_data.metadata.labels."app.k')).to.deep.equal({
      whole: ['raw_data', 'metadata', 'labels'],
      typed: 'app.k',
    });
  });
});
