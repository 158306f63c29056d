-- title: Frameworks supporting a feature
-- Every framework that claims a feature (-p feature ID), best support first, with the source
-- and the two dates (checked: when it was read; as_of: the date of the evidence).
-- Example: rlmguide query frameworks-supporting -p feature asynchronous-execution
SELECT framework_id, support, note, source_id, source_url, checked, as_of, stale
FROM framework_matrix
WHERE feature = $feature
ORDER BY CASE support WHEN 'yes' THEN 0 WHEN 'partial' THEN 1 WHEN 'planned' THEN 2
                      WHEN 'no' THEN 3 ELSE 4 END,
         framework_id
