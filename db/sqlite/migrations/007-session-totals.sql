-- Placeholder for helper-totals' migration 007 (issue 15), so that 008 is in sequence on the
-- helper-search branch. At the merge, helper-totals' file of the same name replaces this one.
SELECT 1;
