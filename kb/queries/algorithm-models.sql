-- title: Models each algorithm needs
-- Which models take part in a step of each algorithm: actor, reference, critic, reward model.
SELECT a.id AS algorithm, a.name,
       string_agg(m.role || CASE WHEN m.need = 'optional' THEN ' (optional)' ELSE '' END, ', '
                  ORDER BY m.role) AS models,
       a.grouped, a.extra_generations_per_prompt
FROM algorithms a JOIN algorithm_models m ON m.algorithm_id = a.id
GROUP BY ALL
ORDER BY a.id
