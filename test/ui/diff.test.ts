import { expect } from 'chai';
import { changeCount, diff, type DiffNode } from '../../src/ui/app/lib/diff.js';

const kinds = (node: DiffNode): string[] => (node.kind === 'array' ? node.items.map((item) => item.node.kind) : []);

describe('structural diff of change values (web interface)', () => {
  it('diffs objects key by key, keeping unchanged keys as such', () => {
    const node = diff({ replicas: 2, image: 'a', gone: true }, { replicas: 3, image: 'a', added: 1 });
    expect(node.kind).to.equal('object');
    if (node.kind !== 'object') return;
    expect(node.entries.map((e) => [e.key, e.node.kind])).to.deep.equal([
      ['replicas', 'changed'],
      ['image', 'same'],
      ['gone', 'removed'],
      ['added', 'added'],
    ]);
    expect(changeCount(node)).to.equal(3);
  });

  it('shows an element inserted into an array as one addition, not every later element changed', () => {
    const app = { name: 'app', image: 'web:1' };
    const db = { name: 'db', image: 'pg:16' };
    const node = diff([app, db], [{ name: 'sidecar', image: 'envoy:1.30' }, app, db]);
    expect(kinds(node)).to.deep.equal(['added', 'same', 'same']);
    expect(changeCount(node)).to.equal(1);
  });

  it('diffs an element replaced by one of the same shape inside, field by field', () => {
    const before = [
      { type: 'Ready', status: 'True' },
      { type: 'DiskPressure', status: 'False' },
    ];
    const after = [
      { type: 'Ready', status: 'False' },
      { type: 'DiskPressure', status: 'False' },
    ];
    const node = diff(before, after);
    expect(kinds(node)).to.deep.equal(['object', 'same']);
    if (node.kind !== 'array' || node.items[0]!.node.kind !== 'object')
      throw new Error('expected an object diff inside the array');
    expect(node.items[0]!.node.entries.map((e) => [e.key, e.node.kind])).to.deep.equal([
      ['type', 'same'],
      ['status', 'changed'],
    ]);
  });

  it('treats key order as no change, and values of different types as a change', () => {
    expect(diff({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }).kind).to.equal('same');
    expect(diff('1', 1)).to.deep.equal({ kind: 'changed', old: '1', new: 1 });
    expect(diff(null, { a: 1 })).to.deep.equal({ kind: 'changed', old: null, new: { a: 1 } });
    expect(diff(undefined, [1])).to.deep.equal({ kind: 'added', value: [1] });
  });

  it('removes elements from the middle of a long array without pairing the rest wrongly', () => {
    const before = Array.from({ length: 200 }, (_, i) => `10.0.0.${i}`);
    const after = before.filter((_, i) => i !== 50 && i !== 120);
    const node = diff(before, after);
    expect(changeCount(node)).to.equal(2);
    if (node.kind !== 'array') throw new Error('expected an array diff');
    expect(node.items.filter((item) => item.node.kind === 'removed').map((item) => item.oldIndex)).to.deep.equal([
      50, 120,
    ]);
  });
});
