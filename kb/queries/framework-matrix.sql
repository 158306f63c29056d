-- title: Framework x feature matrix
-- One row per framework and feature kind: how many claims say yes, partial, planned, no or
-- undocumented.
SELECT framework_id, feature_kind,
       count(*) FILTER (WHERE support = 'yes') AS yes,
       count(*) FILTER (WHERE support = 'partial') AS partial,
       count(*) FILTER (WHERE support = 'planned') AS planned,
       count(*) FILTER (WHERE support = 'no') AS no,
       count(*) FILTER (WHERE support = 'undocumented') AS undocumented
FROM framework_matrix
GROUP BY ALL
ORDER BY framework_id, feature_kind
