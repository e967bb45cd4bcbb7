-- Version 18: the dashboard counts the last hour's events of a few names by minute; on a
-- log of a million events that may not scan it.
CREATE INDEX events_by_name_at ON events (name, at);
