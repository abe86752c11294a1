import { expect } from 'chai';
import { checkQuery } from '../../../src/inventory/queries/check.js';
import { nearest, QUERY_FIELDS } from '../../../src/inventory/queries/fields.js';
import type { Expr } from '../../../src/platform/query-language/ast.js';
import { parseQuery, QueryError, type QueryProblem } from '../../../src/platform/query-language/parse.js';
import { expectConsistent } from './oracle/positions.js';

/**
 * The parser's errors at the unit level: where a typical mistake is reported, what the grammar
 * expected there, and that line, column, offset and excerpt agree; and the checks' nearest names.
 */

function problemOf(run: () => unknown): QueryProblem {
  try {
    run();
  } catch (error) {
    if (error instanceof QueryError) return error.problem;
    throw error;
  }
  throw new Error('no error');
}

const parseProblem = (text: string) => problemOf(() => parseQuery(text));

describe('parseQuery: where a mistake is and what was expected there', () => {
  const CASES: { text: string; line: number; column: number; expected: string[] }[] = [
    { text: 'name = a and (ci_type = k8s.pod', line: 1, column: 32, expected: ['")"'] },
    { text: '((((name = a', line: 1, column: 13, expected: ['")"'] },
    { text: 'name =', line: 1, column: 7, expected: ['a value'] },
    { text: 'name == a', line: 1, column: 7, expected: ['a value'] },
    { text: 'name = "abc', line: 1, column: 8, expected: ['a value'] },
    { text: 'namespace in shop', line: 1, column: 14, expected: ['"("'] },
    {
      text: 'changed since',
      line: 1,
      column: 14,
      expected: ['a time (now, now-24h, 2026-11-30, 2026-11-30T10:00:00Z)'],
    },
    { text: 'name = a b', line: 1, column: 10, expected: ['"and"', '"or"', '"|"', 'the end of the query'] },
    { text: 'ci_type = k8s.pod\n  and name = \n', line: 3, column: 1, expected: ['a value'] },
    { text: 'ci_type = k8s.pod\n  | sortt name', line: 2, column: 5, expected: [] },
    { text: 'ci_type = k8s.pod |', line: 1, column: 20, expected: [] },
    { text: 'not', line: 1, column: 4, expected: ['a comparison (=, !=, <, <=, >, >=)'] },
    { text: 'ünïcode = 1', line: 1, column: 1, expected: ['"not"', '"("', '"*"', '"changed"'] },
    { text: '  ', line: 1, column: 3, expected: ['"not"', '"changed"', '"created"', '"archived"'] },
  ];
  for (const { text, line, column, expected } of CASES) {
    it(`${JSON.stringify(text)}: line ${line}, column ${column}`, () => {
      const problem = parseProblem(text);
      expect({ line: problem.line, column: problem.column }).to.deep.equal({ line, column });
      expect(problem.expected).to.include.members(expected);
      expectConsistent(text, problem);
    });
  }

  it('names a pipe where one was expected, and what follows a pipe keyword where it is missing', () => {
    for (const text of ['* | sortt name', '* | 3', 'name = a |'])
      expect(
        parseProblem(text).expected!.some((e) => e.startsWith('a pipe')),
        text,
      ).to.equal(true);
    // inside a hop or a pipe the parser reports the whole construct's start: only the position is checked
    for (const text of ['* -[runs_on> *', '* | limit', '* | count by', 'x -[manages 2..]-> *', '* | sort name desk'])
      expectConsistent(text, parseProblem(text));
  });

  it('keeps positions on long lines and after line breaks (the excerpt is cut around the position)', () => {
    const long = `${'name = a or '.repeat(30)}name = `;
    const problem = parseProblem(long);
    expect(problem.column).to.equal(long.length + 1);
    expectConsistent(long, problem);
    const lines = 'ci_type = k8s.pod\r\nand name = checkout\r\n-[manages]-> ci_type = \r\n| count';
    expectConsistent(lines, parseProblem(lines));
  });

  it('reads a bare `changed` before and, or and a pipe: the keyword is not taken for a field', () => {
    const kinds = (e: Expr): unknown =>
      e.kind === 'and' || e.kind === 'or'
        ? { [e.kind]: e.items.map(kinds) }
        : e.kind === 'not'
          ? { not: kinds(e.expr) }
          : e.kind;
    const first = (text: string) => kinds(parseQuery(text).path[0] as Expr);
    expect(first('changed and name = a')).to.deep.equal({ and: ['changed', 'compare'] });
    expect(first('CHANGED AND status = active')).to.deep.equal({ and: ['changed', 'compare'] });
    expect(first('not changed or created since now-1h')).to.deep.equal({ or: [{ not: 'changed' }, 'created'] });
    expect(first('name = a and changed')).to.deep.equal({ and: ['compare', 'changed'] });
    expect(parseQuery('changed | count').pipes.map((p) => p.kind)).to.deep.equal(['aggregate']);
    const named = parseQuery('changed name and namespace = shop').path[0] as Extract<Expr, { kind: 'and' }>;
    expect((named.items[0] as Extract<Expr, { kind: 'changed' }>).field?.name).to.equal('name');
  });
});

describe('checkQuery: an unknown name names the nearest known ones', () => {
  const context = {
    moment: new Date('2026-10-01T00:00:00Z'),
    atMoment: false,
    relationshipTypes: ['runs_on', 'manages', 'routes_to'],
  };
  const checked = (text: string) => problemOf(() => checkQuery(text, parseQuery(text), context));
  const CASES: [string, number, string[] | undefined][] = [
    ['nmae = a', 1, ['name']],
    ['ci_typ = k8s.pod', 1, ['ci_type']],
    ['raw = 1', 1, ['raw_data']],
    ['name = a and ci_tpye = k8s.pod', 14, ['ci_type']],
    ['status = activ', 1, ['active']],
    ['status in (active, archvied)', 1, ['archived']],
    ['* -[run_on]-> *', 5, ['runs_on']],
    ['* -[manages, rutes_to 2]-> *', 14, ['routes_to']],
    ['changed since now-1d type UPDATD', 1, ['UPDATED']],
    ['* | sort nmae', 10, ['name']],
    ['* | count by namespce', 14, ['namespace']],
    ['xyzzy = 1', 1, undefined],
  ];
  for (const [text, column, suggestions] of CASES) {
    it(`${text}: column ${column}, ${suggestions ? `suggests ${suggestions.join(', ')}` : 'suggests nothing'}`, () => {
      const problem = checked(text);
      expect(problem.column).to.equal(column);
      expect(problem.suggestions).to.deep.equal(suggestions);
      if (suggestions) expect(problem.message).to.include(`(did you mean ${suggestions.join(', ')}?)`);
      expectConsistent(text, problem);
    });
  }

  it('orders the nearest names by distance, a name the unknown one begins counting as near', () => {
    const fields = Object.keys(QUERY_FIELDS);
    expect(nearest('name', fields)).to.deep.equal(['name', 'namespace']);
    expect(nearest('created', fields)[0]).to.equal('created_at');
    expect(nearest('run', ['runs_on', 'routes_to', 'manages'])).to.deep.equal(['runs_on']);
    expect(nearest('q', fields)).to.deep.equal([]);
    expect(nearest('statuss', fields)).to.deep.equal(['status']);
    expect(nearest('scope', fields).length).to.be.at.most(3);
  });
});
