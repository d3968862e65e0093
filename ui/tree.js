// The waterfall's tree: events nested by parent_id (a span under its parent span, otlp.md T14).
// Built once per data refresh in O(n log n), flattened into the visible rows in O(n) whenever a
// subtree is collapsed or a kind hidden; only that flat list reaches the virtualised timeline.
// Every parent_id is data a client sent: one naming no event of the session (a parent not
// arrived yet) leaves its event at the top level, and the members of a parent cycle are cut
// from their parents and shown at the top level too, so no walk here can loop.

/** How siblings are ordered: by start, then as the API listed them. */
const byStart = (a, b) => a.start - b.start || a.order - b.order;

/**
 * The tree of these rows ({ event, start, ... }, as the timeline keeps them): answers null when
 * no event names a parent (a v2 session: the timeline stays the flat list it always was), else
 * { roots, children }: `roots` the top-level nodes and `children` a Map from a node to its child
 * nodes, both in start order. A node is { row, id, parent, depth }.
 */
export function buildTree(rows) {
  if (!rows.some((row) => typeof row.event.parent_id === "string")) return null;
  const nodes = rows.map((row, order) => ({ row, id: row.event.id, start: row.start, order, parent: null, depth: 0 }));
  const byId = new Map();
  for (const node of nodes) if (!byId.has(node.id)) byId.set(node.id, node); // the first of a repeated id

  // Each node's parent node, or null; `state` 1 while a walk is on it, 2 once it is settled.
  const state = new Map();
  const parentOf = (node) => {
    const id = node.row.event.parent_id;
    const parent = typeof id === "string" && id !== node.id ? byId.get(id) : undefined;
    return parent ?? null;
  };
  for (const start of nodes) {
    if (state.get(start) === 2) continue;
    const path = [];
    let node = start;
    while (node !== null && state.get(node) === undefined) {
      state.set(node, 1);
      path.push(node);
      node = parentOf(node);
    }
    // The walk stopped at a root, at a settled node, or on its own path: a cycle, whose members
    // (from that node to the end of the path) lose their parents.
    const cycleFrom = node !== null && state.get(node) === 1 ? path.indexOf(node) : path.length;
    for (let i = path.length - 1; i >= 0; i--) {
      const member = path[i];
      member.parent = i >= cycleFrom ? null : parentOf(member);
      member.depth = member.parent ? member.parent.depth + 1 : 0;
      state.set(member, 2);
    }
  }

  const roots = [];
  const children = new Map();
  for (const node of nodes) {
    if (node.parent === null) roots.push(node);
    else {
      const list = children.get(node.parent);
      if (list) list.push(node);
      else children.set(node.parent, [node]);
    }
  }
  roots.sort(byStart);
  for (const list of children.values()) list.sort(byStart);
  return { roots, children, byId };
}

/**
 * The rows to show, top to bottom: a depth-first walk that skips the subtrees of collapsed
 * nodes (a set of event ids). The events of a hidden kind are left out and their children take
 * their place, one level up. Each row is the node's row with { depth, hasChildren, expanded,
 * level, posinset, setsize } for drawing and for ARIA.
 */
export function visibleRows(tree, collapsed, hidden) {
  const out = [];
  const stack = [];
  const pushAll = (list, depth, visualParent) => {
    for (let i = list.length - 1; i >= 0; i--) stack.push({ node: list[i], depth, visualParent });
  };
  pushAll(tree.roots, 0, -1);
  const groups = new Map(); // a shown row's index (or -1) → the indexes of its shown children
  while (stack.length > 0) {
    const { node, depth, visualParent } = stack.pop();
    const kids = tree.children.get(node) ?? [];
    if (hidden.has(node.row.event.type)) {
      pushAll(kids, depth, visualParent);
      continue;
    }
    const expanded = !collapsed.has(node.id);
    const index = out.length;
    out.push({ ...node.row, depth, hasChildren: kids.length > 0, expanded, parentIndex: visualParent });
    const group = groups.get(visualParent);
    if (group) group.push(index);
    else groups.set(visualParent, [index]);
    if (expanded) pushAll(kids, depth + 1, index);
  }
  for (const group of groups.values()) {
    group.forEach((index, position) => {
      out[index].posinset = position + 1;
      out[index].setsize = group.length;
    });
  }
  return out;
}

/** The ids of a node's ancestors, nearest first (to open the way to an event). */
export function ancestorIds(tree, id) {
  const ids = [];
  for (let node = tree.byId.get(id)?.parent ?? null; node !== null; node = node.parent) ids.push(node.id);
  return ids;
}
