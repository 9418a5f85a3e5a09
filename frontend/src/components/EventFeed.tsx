import { useState } from "react";
import { describeEvent, MAX_FEED, visibleEvents, type ChainEventRow } from "../lib/events";

export interface EventFeedProps {
  /** Events of finalized blocks, newest first: read when the page opened, then as they come. */
  events: ChainEventRow[];
  /** What the read of past blocks covered. */
  note?: string;
}

/** The latest chain events, one line each; fee and extrinsic bookkeeping hidden unless asked for. */
export function EventFeed({ events, note }: EventFeedProps) {
  const [showAll, setShowAll] = useState(false);
  const shown = visibleEvents(events, showAll);
  return (
    <section aria-labelledby="feed-title" className="card">
      <div className="section-head">
        <h2 id="feed-title">Recent events</h2>
        <div className="filter">
          <input id="feed-all" type="checkbox" checked={showAll} onChange={(e) => setShowAll(e.target.checked)} />
          <label htmlFor="feed-all">show all events</label>
        </div>
      </div>
      <p className="muted">
        From finalized blocks, newest first (at most {MAX_FEED}).{note && ` ${note}`}
      </p>
      {shown.length === 0 ? (
        <p className="empty">No events yet.</p>
      ) : (
        <ol className="feed" aria-live="polite" aria-label="Events">
          {shown.map((e) => {
            const detail = describeEvent(e);
            return (
              <li key={`${e.block}-${e.index}`}>
                <span className="mono">#{e.block}</span> <strong>{`${e.pallet}.${e.name}`}</strong>
                {detail && `: ${detail}`}
              </li>
            );
          })}
        </ol>
      )}
    </section>
  );
}
