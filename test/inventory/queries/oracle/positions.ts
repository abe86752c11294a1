import { expect } from 'chai';

/** Where a query error says it is: what the error envelope's details and a QueryError's problem hold. */
export interface Position {
  message: string;
  line: number;
  column: number;
  offset: number;
  excerpt: string;
}

/** Line and column are 1-based, the offset 0-based, the caret under the column of the offset's line. */
export function expectConsistent(text: string, problem: Position): void {
  const before = text.slice(0, problem.offset);
  const line = before.split('\n').length;
  const column = problem.offset - (before.lastIndexOf('\n') + 1) + 1;
  expect(
    [problem.line, problem.column],
    `${JSON.stringify(text)}: line and column of offset ${problem.offset}`,
  ).to.deep.equal([line, column]);
  const [shown, caret] = problem.excerpt.split('\n');
  expect(caret, problem.excerpt).to.match(/^ *\^$/);
  // the caret stands under the character at the offset (a long line is cut around it, behind an ellipsis)
  const at = text[problem.offset];
  const under = shown![caret!.length - 1];
  if (at === undefined || at === '\n' || at === '\r') expect(under ?? '', problem.excerpt).to.be.oneOf(['', '\r', '…']);
  else expect(under, `${JSON.stringify(text)}: the caret under column ${column}\n${problem.excerpt}`).to.equal(at);
  expect(problem.message).to.match(new RegExp(`^at line ${line}, column ${column}: `));
}
