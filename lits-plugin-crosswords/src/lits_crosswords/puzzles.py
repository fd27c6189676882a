"""The plugin's own small puzzle set, written for it (word squares: row i = column i)."""

from __future__ import annotations

# (answer rows, clues for h1..h5, clues for v1..v5)
PUZZLES: list[tuple[list[str], list[str], list[str]]] = [
    (
        ["HEART", "EMBER", "ABUSE", "RESIN", "TREND"],
        [
            "Organ that keeps the blood moving",
            "Glowing piece left in a dying fire",
            "Treat cruelly",
            "Sticky substance that oozes from pine trees",
            "General direction in which things are moving",
        ],
        [
            "Centre of feeling, or a suit of cards",
            "Last coal of a campfire",
            "Misuse of power or of a drug",
            "Amber starts out as this",
            "What a fashion forecaster spots",
        ],
    ),
    (
        ["GRAPE", "RESIN", "ASSET", "PIECE", "ENTER"],
        [
            "Fruit that grows in bunches on a vine",
            "Pine sap that hardens",
            "Something valuable that you own",
            "One part of a jigsaw",
            "Key pressed to confirm",
        ],
        [
            "Raisin before it dries",
            "Violin players rub it on their bows",
            "Item on a balance sheet",
            "A chess pawn or rook",
            "Go into a room",
        ],
    ),
    (
        ["PLANT", "LOWER", "AWARE", "NERVE", "TREES"],
        [
            "Something that grows in a pot",
            "Bring down",
            "Knowing what is going on",
            "Courage, or a fibre carrying signals",
            "A forest is full of them",
        ],
        [
            "Factory, or to put seeds in soil",
            "Less high",
            "Conscious of",
            "What a daredevil has plenty of",
            "Oaks and elms",
        ],
    ),
    (
        ["START", "THREE", "ARISE", "RESET", "TEETH"],
        [
            "Beginning of a race",
            "One more than two",
            "Come up, or get out of bed",
            "Set a clock back to zero",
            "A dentist looks after them",
        ],
        [
            "Opposite of finish",
            "Number of sides of a triangle",
            "Occur, as a problem might",
            "Restart a router",
            "Things you brush twice a day",
        ],
    ),
    (
        ["LEAST", "EMBER", "ABOVE", "SEVEN", "TREND"],
        ["Smallest in amount", "Spark that outlives a fire", "Higher than", "Days in a week", "What goes viral"],
        ["Minimum amount", "Hot coal", "Over, or overhead", "Number of deadly sins", "Fashion direction"],
    ),
]
