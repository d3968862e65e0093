// The waterfall: one row per event, a bar from its start to its end, coloured by kind. The list
// is virtualised: however many events there are (10 000 and more), only the rows in view, plus a
// few either side, exist in the page, so scrolling and refreshing cost the same as for 20 events.
// It is one ARIA listbox: click a row, or focus the list and use the arrow keys, PageUp/PageDown
// and Home/End, to select an event. When events name their parents (spans, otlp.md T14) it is an
// ARIA tree instead (ui/tree.js): children indented under their parent, a disclosure button on
// each row that has children, ArrowRight/ArrowLeft to expand, collapse, or go to the parent; the
// virtualisation then runs over the rows of the expanded subtrees only.
import { fill, formatDuration, h, micros } from "./common.js";
import { ancestorIds, buildTree, visibleRows } from "./tree.js";

const ROW_HEIGHT = 26; // px; must match .tl-row in app.css
const OVERSCAN = 10;
const INDENT = 14; // px per tree level
const MAX_INDENT_LEVELS = 12; // deeper levels are drawn at this indentation (the level is still told)

/** A row's short name: the model, tool, action or error type. */
export function eventLabel(event) {
  const pick = (...values) => values.find((v) => typeof v === "string" && v !== "");
  switch (event.type) {
    case "llm":
      return pick(event.model) ?? "llm call";
    case "tool":
      return pick(event.name) ?? "tool call";
    case "action":
      return pick(event.action_type, event.name) ?? "action";
    case "error":
      return pick(event.error_type, typeof event.code === "string" ? event.code : undefined) ?? "error";
    default:
      return String(event.type);
  }
}

/** Tick spacing in µs: 1, 2 or 5 × a power of ten, for about six ticks over the span. */
function tickStep(span) {
  const rough = span / 6;
  const power = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= rough) ?? 10 * power;
}

export class Timeline {
  constructor(root, { onSelect }) {
    this.onSelect = onSelect;
    this.all = [];
    this.rows = []; // the shown rows: { event, start, end, label } of the kinds not hidden
    this.hidden = new Set();
    this.tree = null; // the events' tree, when they name parents (buildTree)
    this.collapsed = new Set(); // ids of the collapsed events, kept across refreshes
    this.selectedId = null;
    this.first = -1; // first rendered index, to skip renders that would change nothing

    this.ticks = h("div", { class: "tl-axis-track", "aria-hidden": "true" });
    this.spacer = h("div", { class: "tl-spacer" });
    this.viewport = h(
      "div",
      {
        class: "tl-viewport",
        id: "timeline-list",
        tabindex: "0",
        role: "listbox",
        "aria-label": "Timeline: no events",
        "data-count": "0",
      },
      this.spacer,
    );
    this.empty = h("p", { class: "tl-empty", hidden: true }, "No events to show.");
    fill(
      root,
      h("div", { class: "tl-axis" }, h("div", { class: "tl-axis-label" }, "Event"), this.ticks),
      this.viewport,
      this.empty,
    );

    this.viewport.addEventListener("scroll", () => this.render());
    this.viewport.addEventListener("click", (event) => {
      const row = event.target.closest(".tl-row");
      if (!row) return;
      const toggle = event.target.closest(".tl-toggle");
      // A pointer click leaves the keyboard in the list; Enter or Space on the button keeps it there.
      if (!toggle || event.detail > 0) this.viewport.focus({ preventScroll: true });
      if (toggle) this.toggle(Number(row.dataset.index));
      else this.selectIndex(Number(row.dataset.index));
    });
    this.viewport.addEventListener("keydown", (event) => this.onKey(event));
    new ResizeObserver(() => this.render(true)).observe(this.viewport);
  }

  /** New data (the first load or a live refresh): keeps the selection and the scroll position. */
  setEvents(events) {
    this.all = events.map((event) => {
      const start = micros(event.init_timestamp);
      const end = micros(event.end_timestamp);
      return { event, start, end: Number.isFinite(end) && end >= start ? end : start, label: eventLabel(event) };
    });
    let t0 = Number.POSITIVE_INFINITY;
    let t1 = Number.NEGATIVE_INFINITY;
    for (const row of this.all) {
      if (row.start < t0) t0 = row.start;
      if (row.end > t1) t1 = row.end;
    }
    this.t0 = Number.isFinite(t0) ? t0 : 0;
    this.span = Math.max(t1 - this.t0, 1);
    this.tree = buildTree(this.all);
    this.viewport.setAttribute("role", this.tree ? "tree" : "listbox");
    this.applyFilter();
  }

  /** Shows or hides the events of one kind. */
  setKindHidden(kind, hidden) {
    if (hidden) this.hidden.add(kind);
    else this.hidden.delete(kind);
    this.applyFilter();
  }

  get count() {
    return this.rows.length;
  }

  applyFilter() {
    if (this.tree) this.rows = visibleRows(this.tree, this.collapsed, this.hidden);
    else this.rows = this.hidden.size === 0 ? this.all : this.all.filter((row) => !this.hidden.has(row.event.type));
    this.spacer.style.height = `${this.rows.length * ROW_HEIGHT}px`;
    this.viewport.dataset.count = String(this.rows.length);
    this.viewport.setAttribute("aria-label", `Timeline: ${this.rows.length} events`);
    this.empty.hidden = this.rows.length > 0;
    this.drawTicks();
    this.render(true);
  }

  drawTicks() {
    const step = tickStep(this.span);
    const ticks = [];
    for (let at = 0; at <= this.span; at += step) {
      const tick = h("span", { class: "tl-tick" }, `+${formatDuration(at / 1000)}`);
      tick.style.left = `${(at / this.span) * 100}%`;
      ticks.push(tick);
    }
    fill(this.ticks, ticks);
  }

  /** The selected event as last given to setEvents (shown or in a collapsed subtree), or undefined. */
  get selectedEvent() {
    if (this.selectedId === null) return undefined;
    return (this.rows[this.indexOfSelected()] ?? this.all.find((row) => row.event.id === this.selectedId))?.event;
  }

  /** Collapses or expands the subtree of the row at this index (a row with children). */
  toggle(index, expand) {
    const row = this.rows[index];
    if (!row?.hasChildren) return;
    const open = expand ?? !row.expanded;
    if (open === row.expanded) return;
    if (open) this.collapsed.delete(row.event.id);
    else this.collapsed.add(row.event.id);
    const hadSelection = this.indexOfSelected() >= 0;
    this.applyFilter();
    // The selected event went into the collapsed subtree: the collapsed row takes the selection.
    if (hadSelection && this.indexOfSelected() < 0) this.selectIndex(index);
  }

  indexOfSelected() {
    if (this.selectedId === null) return -1;
    return this.rows.findIndex((row) => row.event.id === this.selectedId);
  }

  /** Draws the rows in view (and OVERSCAN either side) and nothing else. */
  render(force = false) {
    const height = this.viewport.clientHeight || ROW_HEIGHT * 20;
    const first = Math.max(0, Math.floor(this.viewport.scrollTop / ROW_HEIGHT) - OVERSCAN);
    if (!force && first === this.first) return;
    this.first = first;
    const last = Math.min(this.rows.length, first + Math.ceil(height / ROW_HEIGHT) + 2 * OVERSCAN);
    const selected = this.indexOfSelected();
    // A disclosure button with the focus is about to be replaced: its successor gets the focus.
    const active = document.activeElement;
    const refocus = active?.classList.contains("tl-toggle") && this.spacer.contains(active);
    const focusedId = refocus ? active.closest(".tl-row").dataset.eventId : null;
    const elements = [];
    for (let index = first; index < last; index++) elements.push(this.rowElement(index, index === selected));
    fill(this.spacer, elements);
    if (refocus) {
      const row = elements.find((element) => element.dataset.eventId === focusedId);
      (row?.querySelector(".tl-toggle") ?? this.viewport).focus({ preventScroll: true });
    }
    if (selected >= first && selected < last) this.viewport.setAttribute("aria-activedescendant", `tl-ev-${selected}`);
    else this.viewport.removeAttribute("aria-activedescendant");
  }

  rowElement(index, selected) {
    const { event, start, end, label, depth, hasChildren, expanded } = this.rows[index];
    const duration = (end - start) / 1000;
    const hasEnd = typeof event.end_timestamp === "string";
    const bar = h("span", { class: "tl-bar" });
    bar.style.left = `${((start - this.t0) / this.span) * 100}%`;
    bar.style.width = `${((end - start) / this.span) * 100}%`;
    const tree = this.tree !== null;
    const labelCell = h(
      "span",
      { class: "tl-label" },
      tree ? this.disclosure(label, hasChildren, expanded, selected) : null,
      h("span", { class: "tl-kind" }, event.type),
      h("span", { class: "tl-name" }, label),
      h("span", { class: "tl-dur" }, hasEnd ? formatDuration(duration) : ""),
    );
    if (tree) labelCell.style.paddingLeft = `${4 + Math.min(depth, MAX_INDENT_LEVELS) * INDENT}px`;
    const row = h(
      "div",
      {
        class: `tl-row kind-${event.type}${selected ? " selected" : ""}`,
        id: `tl-ev-${index}`,
        role: tree ? "treeitem" : "option",
        "aria-selected": selected ? "true" : "false",
        "aria-level": tree ? depth + 1 : undefined,
        "aria-expanded": tree && hasChildren ? String(expanded) : undefined,
        "aria-posinset": tree ? this.rows[index].posinset : index + 1,
        "aria-setsize": tree ? this.rows[index].setsize : this.rows.length,
        "data-index": index,
        "data-event-id": event.id,
        "data-kind": event.type,
        "data-depth": tree ? depth : undefined,
        title: `${event.type} · ${label} · starts +${formatDuration((start - this.t0) / 1000)} · ${
          hasEnd ? formatDuration(duration) : "no end time"
        }`,
      },
      labelCell,
      h("span", { class: "tl-track" }, bar),
    );
    row.style.top = `${index * ROW_HEIGHT}px`;
    return row;
  }

  /**
   * The disclosure button of a row with children (a blank of its width on the others). Only the
   * selected row's button is in the tab order: Tab from the list reaches it, and the arrow keys
   * do the same from the list itself.
   */
  disclosure(label, hasChildren, expanded, selected) {
    if (!hasChildren) return h("span", { class: "tl-toggle-space", "aria-hidden": "true" });
    return h(
      "button",
      {
        type: "button",
        class: "tl-toggle",
        tabindex: selected ? "0" : "-1",
        "aria-expanded": String(expanded),
        "aria-label": `${expanded ? "Collapse" : "Expand"} ${label}`,
      },
      expanded ? "▾" : "▸",
    );
  }

  /** Selects the event at this index of the shown rows, scrolls it into view and reports it. */
  selectIndex(index) {
    if (this.rows.length === 0) return;
    const bounded = Math.max(0, Math.min(this.rows.length - 1, index));
    const row = this.rows[bounded];
    this.selectedId = row.event.id;
    const top = bounded * ROW_HEIGHT;
    const view = this.viewport;
    if (top < view.scrollTop) view.scrollTop = top;
    else if (top + ROW_HEIGHT > view.scrollTop + view.clientHeight)
      view.scrollTop = top + ROW_HEIGHT - view.clientHeight;
    this.render(true);
    this.onSelect(row.event);
  }

  /** Selects an event by id (a link in the detail panel), opening its collapsed ancestors; false when it is not shown. */
  selectId(id) {
    if (this.tree) {
      const closed = ancestorIds(this.tree, id).filter((ancestor) => this.collapsed.has(ancestor));
      for (const ancestor of closed) this.collapsed.delete(ancestor);
      if (closed.length > 0) this.applyFilter();
    }
    const index = this.rows.findIndex((row) => row.event.id === id);
    if (index >= 0) this.selectIndex(index);
    return index >= 0;
  }

  onKey(event) {
    const navigation = event.key.startsWith("Arrow") || ["PageUp", "PageDown", "Home", "End"].includes(event.key);
    // From a row's disclosure button the keys move in the list, which takes the focus back.
    if (navigation && event.target !== this.viewport) this.viewport.focus({ preventScroll: true });
    const page = Math.max(1, Math.floor(this.viewport.clientHeight / ROW_HEIGHT) - 1);
    const current = this.indexOfSelected();
    const moves = {
      ArrowDown: current + 1,
      ArrowUp: current < 0 ? 0 : current - 1,
      PageDown: current + page,
      PageUp: current - page,
      Home: 0,
      End: this.rows.length - 1,
    };
    const row = this.rows[current];
    if (this.tree && row && (event.key === "ArrowRight" || event.key === "ArrowLeft")) {
      event.preventDefault();
      // Right: open the row, else go to its first child; Left: close it, else go to its parent.
      if (event.key === "ArrowRight" && row.hasChildren && !row.expanded) this.toggle(current, true);
      else if (event.key === "ArrowRight" && this.rows[current + 1]?.parentIndex === current)
        this.selectIndex(current + 1);
      else if (event.key === "ArrowLeft" && row.hasChildren && row.expanded) this.toggle(current, false);
      else if (event.key === "ArrowLeft" && row.parentIndex >= 0) this.selectIndex(row.parentIndex);
      return;
    }
    if (!(event.key in moves)) return;
    event.preventDefault();
    this.selectIndex(moves[event.key]);
  }
}
