-- title: The taxonomy of techniques
-- Every technique with its depth and its path from the root of the tree.
SELECT repeat('  ', depth) || name AS technique, id, scope, path
FROM technique_tree
ORDER BY path
