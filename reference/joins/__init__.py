"""The reference engine's join operators: KStream-KStream, KStream-KTable, KStream-GlobalKTable
(``global_table``) and KTable-KTable, and the KTable source they share. Each module's docstring lists its rules by profile rule name."""
