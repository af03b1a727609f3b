module golabels

go 1.17
