"""The plugin's own small problem set, written for LiTS, so that runs and tests need no download.

Word problems with whole-number answers stand in for GSM8K; short problems
with LaTeX answers (fractions, radicals, pairs, intervals) stand in for MATH.
Real data sets are read from a user-given path instead (see :mod:`lits_math.data`).
"""

from __future__ import annotations

#: (question, answer): multi-step arithmetic word problems with integer answers.
WORD_PROBLEMS: tuple[tuple[str, str], ...] = (
    (
        "A baker fills 12 trays with 8 rolls each. She sells 75 rolls in the morning. How many rolls are left?",
        "21",
    ),
    (
        "Omar reads 14 pages on each weekday and 25 pages on each day of the weekend. "
        "How many pages does he read in 2 weeks?",
        "240",
    ),
    (
        "A school orders 9 boxes of pencils. Each box holds 3 packs of 10 pencils. "
        "The pencils are shared equally among 6 classes. How many pencils does each class get?",
        "45",
    ),
    (
        "Lena buys 3 notebooks at $4 each and 2 pens at $1.50 each. She pays with a $20 bill. "
        "How much change does she get, in dollars?",
        "5",
    ),
    (
        "A water tank holds 600 liters and is one quarter full. A pump adds 45 liters per "
        "minute. How many minutes does it take to fill the tank?",
        "10",
    ),
    (
        "A cyclist rides at 18 kilometers per hour for 2 hours, then at 12 kilometers per "
        "hour for 30 minutes. How many kilometers does she ride in total?",
        "42",
    ),
    (
        "A garden has 5 rows of tomato plants with 7 plants in each row, and each plant gives "
        "6 tomatoes. The gardener gives away one third of the tomatoes. How many does she keep?",
        "140",
    ),
    (
        "Priya earns $15 per hour. She works 6 hours a day for 4 days, plus 3 hours of "
        "overtime paid at twice her hourly rate. How many dollars does she earn in total?",
        "450",
    ),
    (
        "A class of 28 students goes on a trip. Each van carries at most 8 students. "
        "What is the smallest number of vans needed?",
        "4",
    ),
    (
        "A jacket costs $80. In a sale its price is cut by 25%, and Tom uses a coupon for "
        "$5 off the sale price. How many dollars does Tom pay?",
        "55",
    ),
    (
        "Marco is 3 times as old as his daughter. In 12 years he will be twice as old as "
        "she will be then. How old is Marco now?",
        "36",
    ),
    (
        "A farm has only chickens and cows. Together they have 30 heads and 74 legs. How many cows are there?",
        "7",
    ),
)

#: (problem, final answer in LaTeX, subject).
LATEX_PROBLEMS: tuple[tuple[str, str, str], ...] = (
    (
        r"What is $\frac{1}{2} + \frac{1}{4}$? Express your answer as a common fraction.",
        r"\frac{3}{4}",
        "Prealgebra",
    ),
    (r"Simplify $\sqrt{12}$.", r"2\sqrt{3}", "Algebra"),
    (
        r"Solve the system $x + y = 3$, $2x - y = 0$. "
        r"Give your answer as an ordered pair $(x, y)$.",
        r"(1, 2)",
        "Algebra",
    ),
    (r"Find the positive solution of $x^2 - 5x - 14 = 0$.", r"7", "Algebra"),
    (
        r"A fair six-sided die is rolled twice. What is the probability that the two numbers "
        r"add up to 7? Express your answer as a common fraction.",
        r"\frac{1}{6}",
        "Counting & Probability",
    ),
    (
        r"Find all real $x$ with $|2x - 3| < 5$. Express your answer in interval notation.",
        r"(-1, 4)",
        "Algebra",
    ),
    (r"Simplify $\sqrt{50} - \sqrt{8}$.", r"3\sqrt{2}", "Algebra"),
    (
        r"A circle has circumference $10\pi$. What is its area? "
        r"Express your answer in terms of $\pi$.",
        r"25\pi",
        "Geometry",
    ),
    (
        r"What is the slope of the line through $(2, -1)$ and $(8, 3)$? "
        r"Express your answer as a common fraction.",
        r"\frac{2}{3}",
        "Algebra",
    ),
    (r"If $f(x) = 3x^2 - 2x + 1$, what is $f(-2)$?", r"17", "Algebra"),
    (r"What is the remainder when $2^{10}$ is divided by $7$?", r"2", "Number Theory"),
    (r"Compute $\dbinom{7}{3}$.", r"35", "Counting & Probability"),
)
