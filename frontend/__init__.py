"""Frontend: Dynamo backend, AOTAutograd, decompositions, partitioner, FX importer."""
