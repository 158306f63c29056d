-- title: How many claims each source backs
-- Sources ranked by the number of framework claims that cite them.
SELECT s.id, s.type, count(*) AS claims, min(c.checked) AS oldest_check,
       min(c.as_of) AS oldest_evidence
FROM claims c JOIN sources s ON s.id = c.source_id
GROUP BY ALL
ORDER BY claims DESC, s.id
